import type { Backend } from '../catalog/catalog.js'
import { BACKEND_KINDS } from '../catalog/definitions.js'
import { builder } from './builder.js'
import { settingsJson } from './settings.js'

export const BackendKindEnum = builder.enumType('BackendKind', { values: BACKEND_KINDS })

export const BackendRef = builder.objectRef<Backend>('Backend').implement({
  description: 'A provider connection, defined in the server catalog.',
  fields: (t) => ({
    id: t.exposeID('id'),
    kind: t.field({ type: BackendKindEnum, resolve: (b) => b.kind }),
    baseUrl: t.string({ nullable: true, description: "The API base URL; null leaves it to the vendor SDK's default.", resolve: (b) => b.baseUrl ?? null }),
    credentialEnv: t.string({ nullable: true, description: 'The environment variable holding the default API key (never its value).', resolve: (b) => b.credentialEnv ?? null }),
    settings: t.field({ type: 'JSON', description: 'The backend settings layer.', resolve: (b) => settingsJson(b.settings) }),
  }),
})

builder.queryField('backends', (t) =>
  t.field({
    type: [BackendRef],
    description: 'Every configured backend.',
    resolve: (_root, _args, ctx) => ctx.services.catalog.listBackends(),
  }),
)
