import type { CapacitySnapshot } from '../capacity/capacity-pool.js'
import type { Backend } from '../domain/catalog.js'
import { BACKEND_KINDS } from '../domain/definitions.js'
import { builder } from './builder.js'
import { settingsJson } from './settings.js'

export const BackendKindEnum = builder.enumType('BackendKind', { values: BACKEND_KINDS })

const CapacityRef = builder.objectRef<CapacitySnapshot>('BackendCapacity').implement({
  description: "A backend's limits and their use right now.",
  fields: (t) => ({
    maxAccepted: t.exposeInt('maxAccepted', { description: 'Runs accepted at once (from admission to their end).' }),
    maxActive: t.exposeInt('maxActive', { description: 'Model calls in flight at once.' }),
    maxWaiting: t.exposeInt('maxWaiting', { description: 'Runs allowed to wait for acceptance; past that, CAPACITY.' }),
    accepted: t.exposeInt('accepted'),
    active: t.exposeInt('active'),
    waiting: t.exposeInt('waiting'),
  }),
})

const PriceRef = builder.objectRef<{ model: string; inputPerMillion: number; outputPerMillion: number }>('ModelPrice').implement({
  description: 'USD per million tokens.',
  fields: (t) => ({
    model: t.exposeString('model'),
    inputPerMillion: t.exposeFloat('inputPerMillion'),
    outputPerMillion: t.exposeFloat('outputPerMillion'),
  }),
})

export const BackendRef = builder.objectRef<Backend>('Backend').implement({
  description: 'A provider connection, defined in the server catalog.',
  fields: (t) => ({
    id: t.exposeID('id'),
    kind: t.field({ type: BackendKindEnum, resolve: (b) => b.kind }),
    baseUrl: t.string({
      nullable: true,
      description: "The API base URL; null leaves it to the vendor SDK's default.",
      resolve: (b) => b.baseUrl ?? null,
    }),
    credentialEnv: t.string({
      nullable: true,
      description: 'The environment variable holding the default API key (never its value).',
      resolve: (b) => b.credentialEnv ?? null,
    }),
    settings: t.field({ type: 'JSON', description: 'The backend settings layer.', resolve: (b) => settingsJson(b.settings) }),
    capacity: t.field({ type: CapacityRef, resolve: (b, _args, ctx) => ctx.services.catalog.capacityOf(b) }),
    prices: t.field({ type: [PriceRef], resolve: (b) => Object.entries(b.prices ?? {}).map(([model, price]) => ({ model, ...price })) }),
  }),
})

builder.queryField('backends', (t) =>
  t.field({
    type: [BackendRef],
    description: 'Every configured backend.',
    resolve: (_root, _args, ctx) => ctx.services.catalog.listBackends(),
  }),
)
