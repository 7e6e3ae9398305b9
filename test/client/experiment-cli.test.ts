import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROJECT_ROOT } from '../../src/config.js'
import { AddDatasetItemsDocument, CreateDatasetDocument, SetPromptLabelDocument, UpsertPromptDocument } from '../generated/graphql.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

/** Runs `npm run experiment -- …` against the test server: its exit code and what it printed. */
async function cli(t: TestServer, ...args: string[]): Promise<{ code: number; out: string }> {
  const env = { ...process.env, PROMPTLINE_URL: `${t.http.url}/graphql` }
  try {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/experiment.ts', ...args], {
      cwd: PROJECT_ROOT,
      env,
    })
    return { code: 0, out: stdout }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, out: failed.stdout + failed.stderr }
  }
}

describe('npm run experiment', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ provider: 'sqlite' })
    // version 1 answers the item's `word`, version 2 its `alt`; the fake echoes the message
    for (const content of ['{{word}}', '{{alt}}']) {
      await t.request(UpsertPromptDocument, { input: { id: 'pick', messages: [{ role: 'USER', content }], defaultProfileId: 'fake-echo' } })
    }
    await t.request(CreateDatasetDocument, { input: { id: 'picks' } })
    const items = [
      { variables: { word: 'same', alt: 'same' }, expected: 'same' },
      { variables: { word: 'right', alt: 'wrong' }, expected: 'right' },
    ]
    await t.request(AddDatasetItemsDocument, { input: { datasetId: 'picks', items } })
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  it('exits 0 for a run without regression, and 1 with --fail-on-regression when the candidate regressed, printing the comparison', async () => {
    const baseline = await cli(t, '--dataset', 'picks', '--prompt', 'pick#1')
    expect(baseline.code).toBe(0)
    const baselineId = /experiment (\S+)/.exec(baseline.out)![1]!
    expect(baseline.out).toContain('pick#1: COMPLETED; pass rate 100 %')

    const same = await cli(t, '--dataset', 'picks', '--prompt', 'pick#1', '--baseline', baselineId, '--fail-on-regression')
    expect(same.code).toBe(0)
    expect(same.out).toContain('improved 0, regressed 0, unchanged 2')

    const worse = await cli(t, '--dataset', 'picks', '--prompt', 'pick#2', '--baseline', baselineId, '--fail-on-regression')
    expect(worse.out).toContain('REGRESSED')
    expect(worse.out).toContain('improved 0, regressed 1, unchanged 1')
    expect(worse.code).toBe(1)
  })

  it('runs a baseline given by label first, and prints each item by its input and the pass rates before and after', async () => {
    await t.request(SetPromptLabelDocument, { input: { promptId: 'pick', label: 'production', version: 1 } })
    const { code, out } = await cli(t, '--dataset', 'picks', '--prompt', 'pick#2', '--baseline', 'pick@production')
    expect(code).toBe(0)
    expect(out).toMatch(/pick@production: experiment \S+ \(prompt version 1\)/)
    const rows = out.split('\n').filter((line) => line.includes('REGRESSED') || line.includes('UNCHANGED'))
    expect(rows.map((row) => /\{"word":"(\w+)"/.exec(row)?.[1])).toEqual(['same', 'right'])
    expect(out).toContain('pass rate 100 % → 50 % (−50 pts); mean score −0.50 over the items both ran')
  })

  it('says which baseline it cannot find and exits 2', async () => {
    const { code, out } = await cli(t, '--dataset', 'picks', '--prompt', 'pick#1', '--baseline', 'no-such-experiment')
    expect(code).toBe(2)
    expect(out).toContain("--baseline: no experiment 'no-such-experiment'")
  })
})
