import type { ResponseCacheLayer } from '../domain/definitions.js'
import { builder } from './builder.js'

const ResponseCacheModeEnum = builder.enumType('ResponseCacheMode', {
  description: 'Whether runs are answered from the exact response cache.',
  values: {
    EXACT: {
      description:
        'A request equal in everything that decides its answer (tenant, namespace, rendered messages, backend, model, settings, output contract, tools) to an earlier completed one gets that answer, as a run of its own at no cost. No semantic matching.',
    },
    OFF: { description: 'The cache is neither read nor written (on a request: a bypass).' },
  },
})

export const ResponseCacheInput = builder.inputType('ResponseCacheInput', {
  description:
    'One layer of the exact response cache (profile < prompt < request); an absent field inherits (defaults OFF, 3600 s, namespace "default").',
  fields: (t) => ({
    mode: t.field({ type: ResponseCacheModeEnum, description: 'EXACT to use the cache; OFF to bypass it.' }),
    ttlSeconds: t.int({ description: 'How long an answer is served, 1 s to 30 days.' }),
    namespace: t.string({ description: 'Answers are shared only within a namespace (1-64 characters of A-Z a-z 0-9 _ . : -).' }),
  }),
})

export const ResponseCacheLayerRef = builder.objectRef<ResponseCacheLayer>('ResponseCacheSettings').implement({
  description: 'A layer of the exact response cache, as set; a null field inherits.',
  fields: (t) => ({
    mode: t.field({ type: ResponseCacheModeEnum, nullable: true, description: 'EXACT or OFF.', resolve: (c) => c.mode ?? null }),
    ttlSeconds: t.int({ nullable: true, description: 'How long an answer is served.', resolve: (c) => c.ttlSeconds ?? null }),
    namespace: t.string({ nullable: true, description: 'The namespace answers are shared in.', resolve: (c) => c.namespace ?? null }),
  }),
})
