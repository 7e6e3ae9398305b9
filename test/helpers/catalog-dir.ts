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
