import type { PreparedPrompt, PrepareRequest, PromptPreparer } from '../runner/prepare.js'

/** Use cases around running prompts. */
export class RunService {
  constructor(private readonly preparer: PromptPreparer) {}

  /** A dry run: resolution and rendering exactly as a run would do them, without a model call. */
  prepare(request: PrepareRequest): Promise<PreparedPrompt> {
    return this.preparer.prepare(request)
  }
}
