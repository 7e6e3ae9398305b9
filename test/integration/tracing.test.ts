import type { ChildProcess } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { CreateSessionDocument, RunPromptDocument, UpsertPromptDocument } from '../generated/graphql.js'
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js'
import { post, releaseAll, startServerProcess } from '../helpers/process.js'

interface OtlpValue {
  stringValue?: string
  intValue?: string | number
  boolValue?: boolean
  doubleValue?: number
  arrayValue?: { values: OtlpValue[] }
}
interface ExportedSpan {
  name: string
  traceId: string
  spanId: string
  parentSpanId?: string
  kind: number
  attributes: Record<string, unknown>
  status?: { code?: number }
}

const plainValue = (v: OtlpValue): unknown =>
  v.arrayValue
    ? v.arrayValue.values.map(plainValue)
    : (v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue)))

/** An OTLP/HTTP (JSON) trace collector on 127.0.0.1: what the server exports, as plain spans. */
async function startCollector(): Promise<{ url: string; spans: ExportedSpan[]; services: Set<unknown>; server: Server }> {
  const spans: ExportedSpan[] = []
  const services = new Set<unknown>()
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      const request = JSON.parse(body) as {
        resourceSpans: {
          resource: { attributes: { key: string; value: OtlpValue }[] }
          scopeSpans: { spans: (Omit<ExportedSpan, 'attributes'> & { attributes: { key: string; value: OtlpValue }[] })[] }[]
        }[]
      }
      for (const resource of request.resourceSpans) {
        for (const a of resource.resource.attributes) if (a.key === 'service.name') services.add(plainValue(a.value))
        for (const scope of resource.scopeSpans)
          for (const span of scope.spans)
            spans.push({ ...span, attributes: Object.fromEntries(span.attributes.map((a) => [a.key, plainValue(a.value)])) })
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, services, server }
}

describe('OpenTelemetry traces', () => {
  let child: ChildProcess | undefined
  let database: TestDatabase | undefined
  let collector: Awaited<ReturnType<typeof startCollector>> | undefined
  afterEach(async () => {
    await releaseAll(child, undefined, database)
    collector?.server.close()
  })

  it('exports admission, the run, each model call (GenAI conventions), validation, repair and the end write; log lines name the trace', async () => {
    collector = await startCollector()
    database = await createTestDatabase('sqlite')
    const started = await startServerProcess(database.url, {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_SERVICE_NAME: 'promptline-test',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    })
    child = started.child
    // the fake backend echoes, which is no JSON: validation fails, and the one repair too
    const upserted = await post(started.url, UpsertPromptDocument, {
      input: {
        id: 'as-json',
        defaultProfileId: 'fake-echo',
        output: { kind: 'JSON' },
        maxRepairs: 1,
        messages: [{ role: 'USER', content: '{{input}}' }],
      },
    })
    expect(upserted.upsertPrompt.__typename).toBe('UpsertPromptPayload')
    await post(started.url, CreateSessionDocument, { input: { id: 'traced' } })
    const ran = (
      await post(started.url, RunPromptDocument, { input: { sessionId: 'traced', promptId: 'as-json', variables: { input: 'not json' } } })
    ).runPrompt
    if (ran.__typename !== 'RunPromptPayload') throw new Error(JSON.stringify(ran))
    const runId = ran.run!.id

    await expect.poll(() => collector!.spans.filter((s) => s.attributes['promptline.run.id'] === runId).length, { timeout: 15_000 }).toBe(1)
    const run = collector.spans.find((s) => s.attributes['promptline.run.id'] === runId)!
    await expect.poll(() => collector!.spans.filter((s) => s.traceId === run.traceId).length, { timeout: 15_000 }).toBeGreaterThanOrEqual(7)
    const inRun = collector.spans.filter((s) => s.traceId === run.traceId)
    expect(run).toMatchObject({
      name: 'promptline.run',
      attributes: { 'promptline.session.id': 'traced', 'promptline.run.status': 'COMPLETED' },
    })
    expect(run.parentSpanId ?? '').toBe('')

    const calls = inRun.filter((s) => s.name === 'chat echo')
    expect(calls).toHaveLength(2)
    expect(calls[0]).toMatchObject({
      kind: 3, // CLIENT
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'promptline.fake',
        'gen_ai.request.model': 'echo',
        'gen_ai.request.max_tokens': 1024,
        'gen_ai.usage.output_tokens': 2,
        'gen_ai.response.finish_reasons': ['stop'],
      },
    })
    const validations = inRun.filter((s) => s.name === 'promptline.validate')
    expect(validations.map((s) => s.attributes['promptline.output.valid'])).toEqual([false, false])
    const repair = inRun.find((s) => s.name === 'promptline.repair')!
    expect(repair.attributes['promptline.repair.attempt']).toBe(1)
    expect(calls.filter((c) => c.parentSpanId === repair.spanId)).toHaveLength(1)
    expect(calls.filter((c) => c.parentSpanId === run.spanId)).toHaveLength(1)
    expect(inRun.find((s) => s.name === 'promptline.run.end')?.parentSpanId).toBe(run.spanId)

    const admission = collector.spans.find((s) => s.name === 'promptline.admit')!
    expect(admission.attributes['promptline.tenant.id']).toBe('local')
    expect(collector.services).toEqual(new Set(['promptline-test']))

    const finishedLine = started
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.message === 'run finished' && l.runId === runId)
    expect(finishedLine).toMatchObject({ traceId: run.traceId })
  })
})
