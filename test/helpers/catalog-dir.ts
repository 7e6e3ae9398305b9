import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

/** A temporary catalog folder with the given files (name → content). */
export function catalogDir(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'promptline-catalog-'))
  for (const [name, content] of Object.entries(files)) writeFileSync(path.join(dir, name), content)
  return dir
}

export const BACKENDS_YAML = `
backends:
  - id: fake
    kind: FAKE
  - id: openai
    kind: OPENAI
    credentialEnv: OPENAI_API_KEY
`

/**
 * A catalog folder whose `oa` and `an` backends are the fake vendors at `openai` and `anthropic`
 * (keys from OA_KEY and AN_KEY), with profiles `fake-echo`, `oa-plain` and `an-plain`, and the
 * given lines of backends, profiles and prompts besides.
 */
export function vendorCatalog(
  openai: { baseUrl: string },
  anthropic: { baseUrl: string },
  more: { backends?: string[]; profiles?: string[]; prompts?: string } = {},
): string {
  const lines = (items: string[] = []) => items.map((item) => `\n  - ${item}`).join('')
  return catalogDir({
    'catalog.yaml': `
backends:
  - { id: fake, kind: FAKE }
  - { id: oa, kind: OPENAI, baseUrl: "${openai.baseUrl}", credentialEnv: OA_KEY }
  - { id: an, kind: ANTHROPIC, baseUrl: "${anthropic.baseUrl}", credentialEnv: AN_KEY }${lines(more.backends)}
profiles:
  - { id: fake-echo, backendId: fake, model: echo }
  - { id: oa-plain, backendId: oa, model: gpt-test }
  - { id: an-plain, backendId: an, model: claude-test }${lines(more.profiles)}
${more.prompts ? `prompts:${more.prompts}` : ''}`,
  })
}
