import type { GenerateContentParameters, GoogleGenAI, ThinkingLevel } from '@google/genai'
import type { Credential } from '../domain/credentials.js'
import { type FinishReason, type Usage, usageOf } from '../domain/records.js'
import { ClientCache } from './client-cache.js'
import { geminiContents, geminiTools } from './gemini-request.js'
import type { GenerateEvent, GenerateRequest, ModelClient } from './model-client.js'
import { classifyVendorError, ProviderError, vendorStreamError } from './provider-error.js'
import type { ServerSentEvent } from './sse.js'
import { type AnswerReader, answerDeltas, ToolCallFragments, vendorFetch } from './vendor-http.js'

/** The parts of Gemini's answer that promptline reads, as the wire has them (camelCase JSON). */
interface WirePart {
  text?: string
  thought?: boolean
  thoughtSignature?: string
  functionCall?: { id?: string; name?: string; args?: Record<string, unknown> }
}
interface WireChunk {
  candidates?: { content?: { parts?: WirePart[] }; finishReason?: string }[]
  usageMetadata?: {
    promptTokenCount?: number
    candidatesTokenCount?: number
    cachedContentTokenCount?: number
    thoughtsTokenCount?: number
    toolUsePromptTokenCount?: number
  }
  promptFeedback?: { blockReason?: string }
  error?: { code?: number; status?: string; message?: string }
}

/**
 * Gemini's usage, in ours: its promptTokenCount includes the cached tokens, and its
 * candidatesTokenCount leaves the thinking out, which is output (and billed as output) too.
 */
function geminiUsage(usage: NonNullable<WireChunk['usageMetadata']>): Usage {
  const reasoningTokens = usage.thoughtsTokenCount ?? 0
  return usageOf({
    inputTokens: (usage.promptTokenCount ?? 0) + (usage.toolUsePromptTokenCount ?? 0),
    outputTokens: (usage.candidatesTokenCount ?? 0) + reasoningTokens,
    cacheReadTokens: usage.cachedContentTokenCount ?? 0,
    reasoningTokens,
  })
}

// Gemini's finishReason in ours: its safety and policy stops are the content filter's
const FINISH_REASONS: Record<string, FinishReason> = {
  STOP: 'STOP',
  MAX_TOKENS: 'LENGTH',
  SAFETY: 'CONTENT_FILTER',
  RECITATION: 'CONTENT_FILTER',
  BLOCKLIST: 'CONTENT_FILTER',
  PROHIBITED_CONTENT: 'CONTENT_FILTER',
  SPII: 'CONTENT_FILTER',
  IMAGE_SAFETY: 'CONTENT_FILTER',
  IMAGE_PROHIBITED_CONTENT: 'CONTENT_FILTER',
}

/**
 * Gemini through the official @google/genai SDK: the SDK builds and sends the request (its URL,
 * its key header, its body's conversion) and raises its errors; the event stream is read here
 * with `serverSentEvents`, as OpenAI's and Anthropic's are (the SDK's reader makes a `Response`
 * and a JSON promise of every chunk). The SDK retries nothing unless asked to; retries are ours.
 * A backend's `baseUrl` redirects it (`GOOGLE_GEMINI_BASE_URL` is the SDK's own default).
 */
export class GeminiModelClient implements ModelClient {
  private readonly clients = new ClientCache<GoogleGenAI>()

  async *generate(request: GenerateRequest, signal: AbortSignal): AsyncIterable<GenerateEvent> {
    const apiKey = request.credential.reveal() ?? ''
    const client = await this.clients.get(request.endpoint, apiKey, async () => {
      const { GoogleGenAI } = await import('@google/genai')
      return new GoogleGenAI({ apiKey, httpOptions: { ...(request.endpoint && { baseUrl: request.endpoint }), timeout: 10 * 60_000 } })
    })
    // the SDK's own fetch option hands us the response, whose body the SDK then never reads
    let response: Response | null = null
    const fetchAnswer = async (input: string | URL | Request, init?: RequestInit) => {
      response = await vendorFetch(input, init)
      return response
    }
    const answer = new GeminiAnswer(request.credential.reveal())
    try {
      await client.models.generateContentStream(geminiParameters(request, signal, fetchAnswer))
      if (!response) throw new Error('the SDK made no request')
      yield* answerDeltas(response, answer)
      signal.throwIfAborted()
    } catch (error) {
      if (signal.aborted) throw signal.reason
      throw geminiError(error, request.credential)
    }
    yield answer.end()
  }
}

/** The request in the SDK's terms (its config fields are camelCase, as `extra` must be). */
function geminiParameters(request: GenerateRequest, signal: AbortSignal, fetch: typeof vendorFetch): GenerateContentParameters {
  const { settings } = request
  const { system, contents } = geminiContents(request.messages, request.files)
  return {
    model: request.model,
    contents,
    config: {
      abortSignal: signal,
      httpOptions: { fetch },
      automaticFunctionCalling: { disable: true },
      ...(system !== '' && { systemInstruction: system }),
      ...geminiTools(request.tooling),
      ...(settings.temperature != null && { temperature: settings.temperature }),
      ...(settings.topP != null && { topP: settings.topP }),
      ...(settings.seed != null && { seed: settings.seed }),
      ...(settings.maxTokens != null && { maxOutputTokens: settings.maxTokens }),
      ...(settings.stop != null && settings.stop.length > 0 && { stopSequences: settings.stop }),
      ...(settings.reasoningEffort != null && {
        thinkingConfig: { includeThoughts: true, thinkingLevel: settings.reasoningEffort.toUpperCase() as ThinkingLevel },
      }),
      ...(request.outputSchema && { responseMimeType: 'application/json', responseJsonSchema: request.outputSchema }),
      ...settings.extra,
    },
  }
}

/** Gemini's error body, as the SDK's ApiError quotes it in its message (JSON, maybe JSON in a string). */
type RpcError = { code?: number; status?: string; message?: string; details?: { '@type'?: string; reason?: string; retryDelay?: string }[] }

function rpcErrorOf(message: string): RpcError | null {
  try {
    let error = (JSON.parse(message.replace(/^got status: \S+\. /, '')) as { error?: RpcError }).error ?? null
    // a body sent as text/event-stream reaches the SDK as text, which it wraps as the message
    if (error && typeof error.message === 'string' && error.message.trimStart().startsWith('{')) error = rpcErrorOf(error.message) ?? error
    return error
  } catch {
    return null
  }
}

/**
 * A Gemini failure as a ProviderError: an invalid key is a 400 there (API_KEY_INVALID), and a
 * 429 says how long to wait in its RetryInfo, not in a header. The rest as the other vendors'.
 */
function geminiError(error: unknown, credential: Credential): ProviderError {
  const e = error as { status?: unknown; message?: unknown }
  if (typeof e?.status !== 'number' || typeof e.message !== 'string') return classifyVendorError(error, 'Gemini', credential.reveal())
  const rpc = rpcErrorOf(e.message)
  if (rpc?.details?.some((d) => d.reason === 'API_KEY_INVALID'))
    return new ProviderError(
      `Gemini refused the credentials (${e.status} API_KEY_INVALID)`,
      'NEXT_CANDIDATE',
      e.status,
      null,
      'UNAUTHORIZED',
    )
  const delay = rpc?.details?.find((d) => d.retryDelay)?.retryDelay
  const headers = new Headers(delay ? { 'retry-after-ms': String(Math.round(Number.parseFloat(delay) * 1000)) } : {})
  return classifyVendorError({ status: e.status, message: rpc?.message ?? e.message, headers }, 'Gemini', credential.reveal())
}

/** What a Gemini answer said besides its text, read chunk by chunk (or from one whole response). */
class GeminiAnswer implements AnswerReader {
  private usage = usageOf()
  private finishReason: string | null = null
  private blockReason: string | null = null
  private thinking = ''
  private signature: string | null = null
  private calls = 0
  readonly toolCalls = new ToolCallFragments()

  constructor(private readonly secret: string | undefined) {}

  read({ data }: ServerSentEvent): string | null {
    return data === '' ? null : this.readChunk(JSON.parse(data) as WireChunk)
  }

  readWhole(body: unknown): string {
    return this.readChunk(body as WireChunk)
  }

  /** One response chunk: usage is cumulative in each, a call comes whole in one part. */
  private readChunk(chunk: WireChunk): string {
    if (chunk.error) throw vendorStreamError('Gemini', chunk.error.status ?? null, chunk.error.message ?? '', this.secret)
    if (chunk.usageMetadata) this.usage = geminiUsage(chunk.usageMetadata)
    if (chunk.promptFeedback?.blockReason) this.blockReason = chunk.promptFeedback.blockReason
    const candidate = chunk.candidates?.[0]
    if (candidate?.finishReason) this.finishReason = candidate.finishReason
    let text = ''
    for (const part of candidate?.content?.parts ?? []) {
      // Gemini 3 signs its first call (or its text); the signature must go back with that part
      if (part.thoughtSignature && this.signature === null) this.signature = part.thoughtSignature
      if (part.functionCall) {
        const { id, name, args } = part.functionCall
        this.toolCalls.add(this.calls++, id ?? null, name ?? '', JSON.stringify(args ?? {}))
      } else if (part.thought) this.thinking += part.text ?? ''
      else if (part.text) text += part.text
    }
    return text
  }

  end(): GenerateEvent {
    const vendorReason = this.blockReason ?? this.finishReason
    const reason: FinishReason = this.blockReason
      ? 'CONTENT_FILTER'
      : this.calls > 0 && this.finishReason === 'STOP'
        ? 'TOOL_CALLS'
        : (FINISH_REASONS[this.finishReason ?? ''] ?? 'OTHER')
    return {
      type: 'end',
      usage: this.usage,
      finish: { reason, vendorReason, refusal: null },
      reasoning: this.thinking === '' && this.signature === null ? null : { text: this.thinking, signature: this.signature },
    }
  }
}
