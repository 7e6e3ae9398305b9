import type { CatalogReader, Prompt, PromptInclude } from '../domain/catalog.js'
import { type PromptDefinition, templateTextsOf } from '../domain/definitions.js'
import { InvalidRequestError } from '../domain/errors.js'
import { type IncludedText, renderTemplates, templateIncludes } from '../domain/template.js'
import { choosePrompt } from './prompt-ref.js'

/** Deepest chain of includes below a prompt. */
const MAX_INCLUDE_DEPTH = 5

/** The prompt versions a prompt's includes stand for, by reference, and as recorded. */
export interface ResolvedIncludes {
  byKey: ReadonlyMap<string, Prompt>
  list: PromptInclude[]
}

export const NO_INCLUDES: ResolvedIncludes = { byKey: new Map(), list: [] }

/**
 * Resolves every include below `root`, each reference once: a pinned version when admission
 * fixed one, else as a request would (`#3`, `@label`, else `production`, else `latest`). A
 * prompt met again on its own path is a cycle and a chain deeper than five is refused, both as
 * an InvalidRequestError at `field` naming the path, since labels may have moved since the
 * prompt was saved.
 */
export async function resolveIncludes(
  catalog: CatalogReader,
  tenantId: string,
  sessionId: string | null,
  root: { id: string; definition: PromptDefinition },
  pinned: readonly PromptInclude[] | undefined,
  field: string,
): Promise<ResolvedIncludes> {
  const pins = new Map(pinned?.map((p) => [p.key, p.version]))
  const byKey = new Map<string, Prompt>()
  const walk = async (definition: PromptDefinition, path: string[]): Promise<void> => {
    for (const ref of templateIncludes(templateTextsOf(definition.messages))) {
      const chain = [...path, ref.promptId]
      if (path.includes(ref.promptId)) throw InvalidRequestError.at(field, `includes form a cycle: ${chain.join(' → ')}`)
      if (chain.length - 1 > MAX_INCLUDE_DEPTH) {
        throw InvalidRequestError.at(field, `includes nest deeper than ${MAX_INCLUDE_DEPTH}: ${chain.join(' → ')}`)
      }
      let child = byKey.get(ref.key)
      if (!child) {
        const pin = pins.get(ref.key) ?? ref.version
        const choice = pin != null ? { promptVersion: pin } : ref.label !== null ? { promptLabel: ref.label } : {}
        child = (await choosePrompt(catalog, tenantId, sessionId, { promptId: ref.promptId, ...choice })).prompt
        byKey.set(ref.key, child)
      }
      await walk(child.definition, chain)
    }
  }
  await walk(root.definition, [root.id])
  const list = [...byKey].map(([key, p]) => ({ key, promptId: p.id, version: p.version, definitionHash: p.definitionHash }))
  return list.length === 0 ? NO_INCLUDES : { byKey, list }
}

/** Renders an include: the included prompt's messages' text, each rendered, separated by a blank line. */
export function includedText(includes: ResolvedIncludes): IncludedText {
  const render: IncludedText = (ref, variables) => {
    const prompt = includes.byKey.get(ref.key)
    if (!prompt) throw new InvalidRequestError(`'{{> ${ref.key}}}' was not resolved`)
    return renderTemplates(
      prompt.definition.messages.map((m) => m.content),
      variables,
      render,
    ).join('\n\n')
  }
  return render
}
