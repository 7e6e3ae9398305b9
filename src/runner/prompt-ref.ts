import type { CatalogReader, Prompt } from '../domain/catalog.js'
import { NotFoundError } from '../domain/errors.js'
import { LATEST_LABEL, PRODUCTION_LABEL, splitBucket, versionInSplit } from '../domain/prompt-labels.js'
import type { RunRequest } from '../domain/records.js'

/** The prompt version a request runs, and the label (and split bucket) that chose it. */
export interface ChosenPrompt {
  prompt: Prompt
  label: string | null
  bucket: number | null
}

/**
 * Which version of a prompt a request runs: the one admission pinned (a queued or recovered
 * entry), else the version named, else the label's (`production` when none is named and it
 * exists, else `latest`). A split label picks by the session's bucket, so a session stays on
 * one version while the split stands.
 */
export async function choosePrompt(
  catalog: CatalogReader,
  tenantId: string,
  sessionId: string | null,
  request: Pick<RunRequest, 'promptVersion' | 'promptLabel' | 'admission'> & { promptId: string },
): Promise<ChosenPrompt> {
  const current = await catalog.getPrompt(tenantId, request.promptId)
  if (!current) throw new NotFoundError('prompt', request.promptId)
  const version = (v: number) => versionOf(catalog, tenantId, current, v)
  const pinned = request.admission
  if (pinned?.promptVersion != null)
    return { prompt: await version(pinned.promptVersion), label: pinned.promptLabel, bucket: pinned.splitBucket }
  if (request.promptVersion !== undefined) return { prompt: await version(request.promptVersion), label: null, bucket: null }
  const name = request.promptLabel ?? PRODUCTION_LABEL
  if (name === LATEST_LABEL) return { prompt: current, label: LATEST_LABEL, bucket: null }
  const label = await catalog.getPromptLabel(tenantId, current.id, name)
  if (!label) {
    if (request.promptLabel !== undefined) throw await labelNotFound(catalog, tenantId, current.id, name)
    return { prompt: current, label: LATEST_LABEL, bucket: null }
  }
  if (!label.split) return { prompt: await version(label.version), label: name, bucket: null }
  const bucket = splitBucket(sessionId, name)
  return { prompt: await version(versionInSplit(label.split, bucket)), label: name, bucket }
}

/** A missing label's error, naming the labels the prompt has so the fix is in the message. */
async function labelNotFound(catalog: CatalogReader, tenantId: string, promptId: string, name: string): Promise<NotFoundError> {
  const labels = (await catalog.listPromptLabels(tenantId, promptId)).map((l) => l.name)
  const has = labels.length > 0 ? `its labels: ${labels.join(', ')}` : 'it has no labels yet (setPromptLabel adds one)'
  return new NotFoundError('prompt label', `${promptId}@${name}`, `label '${name}' of prompt '${promptId}' not found; ${has}`)
}

/** The prompt as it was at `version`: its current self, or a stored version under its id and description. */
async function versionOf(catalog: CatalogReader, tenantId: string, current: Prompt, version: number): Promise<Prompt> {
  if (version === current.version) return current
  const stored = await catalog.getPromptVersion(tenantId, current.id, version)
  if (!stored) throw new NotFoundError('prompt version', `${current.id}#${version}`)
  const { source, definitionHash, definition, variables, createdAt } = stored
  return { ...current, source, version, definitionHash, definition, variables, updatedAt: createdAt }
}
