import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import type { Principal } from '../domain/access.js'
import { idSchema, parseInput } from '../domain/definitions.js'
import { NotFoundError } from '../domain/errors.js'
import type { RunRecord } from '../domain/records.js'
import type { CatalogService } from './catalog-service.js'
import type { RunService } from './run-service.js'
import type { SessionService } from './session-service.js'

/** Prompts in one page of `prompts/list`. */
const PAGE = 50

const runPromptSchema = z.strictObject({
  promptId: idSchema,
  variables: z.record(z.string(), z.unknown()).nullish(),
  label: z.string().min(1).max(64).nullish(),
  version: z.number().int().min(1).nullish(),
  profileId: idSchema.nullish(),
  sessionId: idSchema.nullish(),
})

/** What `run_prompt` and `get_run` answer: the output as text, and the run as structured content. */
export interface ToolAnswer {
  text: string
  structured: Record<string, unknown>
  isError: boolean
}

/** The JSON Schemas of the tools `/mcp` offers, as `tools/list` declares them. */
export const MCP_TOOLS = [
  {
    name: 'run_prompt',
    description:
      "Runs a prompt of the catalog and waits for its answer: the output as text, the run's id, status, usage and cost as structured content.",
    inputSchema: {
      type: 'object',
      properties: {
        promptId: { type: 'string', description: 'The prompt.' },
        variables: { type: 'object', description: "Values of the prompt's variables." },
        label: { type: 'string', description: 'The label whose version runs (default: production, else the newest).' },
        version: { type: 'integer', description: 'The version that runs, instead of a label.' },
        profileId: { type: 'string', description: "The profile that runs it (default: the prompt's)." },
        sessionId: { type: 'string', description: 'A session to run it in, continuing its conversation (default: a new one).' },
      },
      required: ['promptId'],
    },
  },
  {
    name: 'get_run',
    description: 'A run by id: its output as text, its status, usage and cost as structured content.',
    inputSchema: { type: 'object', properties: { runId: { type: 'string', description: 'The run.' } }, required: ['runId'] },
  },
] as const

/** A run as `structuredContent`. */
function runSummary(run: RunRecord) {
  return {
    runId: run.id,
    sessionId: run.sessionId,
    status: run.status,
    promptId: run.promptId,
    promptVersion: run.promptVersion,
    profileId: run.profileId,
    usage: run.usage,
    costUsd: run.costUsd,
    errorCode: run.errorCode,
  }
}

const answerOf = (run: RunRecord): ToolAnswer => ({
  text: run.status === 'FAILED' ? (run.errorMessage ?? 'the run failed') : (run.output ?? ''),
  structured: runSummary(run),
  isError: run.status === 'FAILED' || run.status === 'ABORTED',
})

/** promptline's prompts and runs as an MCP server shows them: prompts to list and render, and two tools. */
export class McpPromptService {
  constructor(
    private readonly catalog: CatalogService,
    private readonly runs: RunService,
    private readonly sessions: SessionService,
  ) {}

  /** `prompts/list`: a page of the prompts the key may run, each with its variables as arguments. */
  async listPrompts(principal: Principal, cursor: string | null) {
    const allowed = principal.policy?.allowedPrompts
    const page = await this.catalog.listPrompts(principal.tenantId, cursor, PAGE)
    const prompts = page
      .filter((p) => !allowed || allowed.includes(p.id))
      .map((p) => ({
        name: p.id,
        description: p.description ?? undefined,
        arguments: [
          // a template renders only with every variable it names: each is required
          ...p.variables.map((name) => ({ name, required: true })),
          { name: 'label', description: 'The label whose version renders (default: production, else the newest).', required: false },
          { name: 'version', description: 'The version that renders, instead of a label.', required: false },
        ],
      }))
    return { prompts, nextCursor: page.length === PAGE ? page.at(-1)!.id : undefined }
  }

  /** `prompts/get`: the prompt's messages rendered as a run would render them (its profile must be usable). */
  async getPrompt(principal: Principal, name: string, args: Record<string, string>) {
    const id = parseInput(idSchema, name, 'name')
    const { label, version, ...variables } = args
    const promptRef = { id, ...(label && { label }), ...(version && { version: Number(version) }) }
    const prepared = await this.runs.prepare(principal.tenantId, { promptRef, variables })
    if (!prepared.prompt) throw new NotFoundError('prompt', id)
    return {
      description: `${id} version ${prepared.prompt.version}${prepared.promptLabel ? ` (${prepared.promptLabel})` : ''}`,
      // MCP has user and assistant messages only: a system message is given as the user's
      messages: prepared.messages.map((m) => ({
        role: m.role === 'assistant' ? ('assistant' as const) : ('user' as const),
        content: { type: 'text' as const, text: m.content },
      })),
    }
  }

  /** `run_prompt`: runs the prompt in the given session or a new one, and waits for its end. */
  async runPrompt(principal: Principal, args: unknown): Promise<ToolAnswer> {
    const input = parseInput(runPromptSchema, args, 'arguments')
    const sessionId = input.sessionId ?? `mcp-${randomUUID()}`
    if (!input.sessionId) await this.sessions.create(principal.tenantId, { id: sessionId, title: 'MCP run_prompt' })
    const promptRef = { id: input.promptId, ...(input.label && { label: input.label }), ...(input.version && { version: input.version }) }
    const request = { sessionId, promptRef, variables: input.variables ?? null, profileId: input.profileId ?? null }
    const { run } = await this.runs.runPrompt(principal, request, 'ENQUEUE', 3_600_000, 'MCP').catch(async (error: unknown) => {
      // refused (a budget, a limit, a missing prompt): the session made for it holds nothing
      if (!input.sessionId) await this.sessions.delete(principal.tenantId, sessionId).catch(() => {})
      throw error
    })
    if (!run) throw new NotFoundError('run', `of session '${sessionId}'`)
    return answerOf(run)
  }

  /** `get_run`: the run as it is now. */
  async getRun(principal: Principal, args: unknown): Promise<ToolAnswer> {
    const { runId } = parseInput(z.strictObject({ runId: z.string().min(1).max(128) }), args, 'arguments')
    const run = await this.runs.run(principal.tenantId, runId, 'runId')
    if (!run) throw new NotFoundError('run', runId)
    return answerOf(run)
  }
}
