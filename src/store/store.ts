import { ApiKeyStore } from './api-key-store.js'
import { BudgetLedger } from './budget-ledger.js'
import { type Database, openDatabase } from './database.js'
import { DatasetStore } from './dataset-store.js'
import { EventStore } from './event-store.js'
import { ExperimentStore } from './experiment-store.js'
import { FileStore } from './file-store.js'
import { migrate, pendingMigrations } from './migrator.js'
import { ProfileStore } from './profile-store.js'
import { PromptLabelStore } from './prompt-label-store.js'
import { PromptStore } from './prompt-store.js'
import { QueueStore } from './queue-store.js'
import { ResponseCacheStore } from './response-cache-store.js'
import { RunLedger } from './run-ledger.js'
import { RunPathStatements } from './run-path-statements.js'
import { RunStore } from './run-store.js'
import { SessionStore } from './session-store.js'
import { UsageReports } from './usage-reports.js'
import { WebhookStore } from './webhook-store.js'

/** The repositories over one database. It owns the connection: `close()` releases it. */
export class Store {
  readonly prompts: PromptStore
  readonly labels: PromptLabelStore
  readonly profiles: ProfileStore
  readonly sessions: SessionStore
  readonly entries: QueueStore
  readonly runs: RunStore
  readonly events: EventStore
  readonly ledger: RunLedger
  readonly webhooks: WebhookStore
  readonly usage: UsageReports
  readonly responseCache: ResponseCacheStore
  readonly files: FileStore
  readonly apiKeys: ApiKeyStore
  readonly budgets: BudgetLedger
  readonly datasets: DatasetStore
  readonly experiments: ExperimentStore

  constructor(
    private readonly database: Database,
    /** Where uploaded files' bytes go; null: in the database. */
    filesDir: string | null = null,
  ) {
    this.prompts = new PromptStore(database.db)
    this.labels = new PromptLabelStore(database.db)
    this.profiles = new ProfileStore(database.db)
    const statements = new RunPathStatements(database.sql)
    this.sessions = new SessionStore(database.db, database.sql, statements)
    this.entries = new QueueStore(database.db, statements)
    this.runs = new RunStore(database.db, statements)
    this.events = new EventStore(database.db, statements)
    this.usage = new UsageReports(database.sql, database.provider)
    this.webhooks = new WebhookStore(database.db)
    this.responseCache = new ResponseCacheStore(database.db)
    this.files = new FileStore(database.db, filesDir)
    this.ledger = new RunLedger(database.sql, statements, this.webhooks)
    this.apiKeys = new ApiKeyStore(database.db)
    this.budgets = new BudgetLedger(database.sql)
    this.experiments = new ExperimentStore(database.db, this.webhooks)
    this.datasets = new DatasetStore(database.db)
  }

  get provider() {
    return this.database.provider
  }

  /** Resolves when the database answers a trivial query. */
  async ping(): Promise<void> {
    await this.database.db.$queryRaw`SELECT 1`
  }

  /** Why the store cannot serve yet (unreachable, or migrations pending), or null when it can. */
  async unready(): Promise<string | null> {
    try {
      await this.ping()
    } catch {
      return 'the database does not answer'
    }
    const pending = await pendingMigrations(this.database)
    return pending.length > 0 ? `migrations not applied: ${pending.join(', ')}` : null
  }

  close(): Promise<void> {
    return this.database.close()
  }
}

/** Opens the database at `url`, applies pending migrations, and returns its store. */
export async function openStore(url: string, filesDir: string | null = null): Promise<Store> {
  const database = await openDatabase(url)
  try {
    await migrate(database)
  } catch (err) {
    await database.close()
    throw err
  }
  return new Store(database, filesDir)
}
