import { expect } from 'vitest'

export type Labels = Record<string, string>

/** One sample line of the Prometheus text format: `name{label="value",…} number`. */
interface PrometheusSample {
  name: string
  labels: Record<string, string>
  value: number
}

const COMMENT = /^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*$/
// values as Go's ParseFloat reads them: NaN and Inf in any case
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.e+-]+|[Nn][Aa][Nn]|[+-]?[Ii]nf)$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/gy

/** Parses the Prometheus text exposition format strictly: a line that is neither a comment nor a sample throws. */
function parsePrometheusText(text: string): PrometheusSample[] {
  const samples: PrometheusSample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || COMMENT.test(line)) continue
    const match = SAMPLE.exec(line)
    if (!match) throw new Error(`not Prometheus text: ${line}`)
    const labels: Record<string, string> = {}
    const body = match[2] ?? ''
    LABEL.lastIndex = 0
    while (LABEL.lastIndex < body.length) {
      const label = LABEL.exec(body)
      if (!label) throw new Error(`bad labels: ${line}`)
      labels[label[1]!] = label[2]!
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) })
  }
  return samples
}

/**
 * Scrapes `${url}/metrics`; the answer sums the samples named `name` whose labels include
 * `labels` (a histogram: its `_count`), 0 when none.
 */
export async function scrape(url: string): Promise<(name: string, labels?: Labels) => number> {
  const response = await fetch(`${url}/metrics`)
  expect(response.headers.get('content-type')).toContain('text/plain')
  const samples = parsePrometheusText(await response.text())
  return (name, labels = {}) =>
    samples
      .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
      .reduce((sum, s) => sum + s.value, 0)
}
