import { dataloaderGetter } from '@pothos/plugin-dataloader'
import type { Context } from './context.js'

/**
 * A DataLoader made once per request (@pothos/plugin-dataloader's context cache): the keys a
 * request's fields ask for in one turn go to `load` together, which answers in their order.
 */
export const perRequestLoader = <K, V>(load: (keys: K[], ctx: Context) => Promise<readonly V[]>) =>
  dataloaderGetter<K, V, K>(undefined, (keys, ctx) => load(keys, ctx as Context), undefined, false)
