import { parseInput } from '../domain/definitions.js'
import { usageQuerySchema } from '../domain/usage-report.js'
import type { Store } from '../store/store.js'

/** Reports over what a tenant's runs used, computed by the database. */
export class UsageService {
  constructor(private readonly store: Store) {}

  /** Runs, tokens and cost of the runs started in [from, to), grouped as asked. */
  report(tenantId: string, input: { from: Date; to: Date; groupBy: readonly string[] }) {
    return this.store.usage.report(tenantId, parseInput(usageQuerySchema, input, ''))
  }
}
