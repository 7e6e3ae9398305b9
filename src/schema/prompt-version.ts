import type { PromptVersion } from '../domain/catalog.js'
import { InvalidRequestError } from '../domain/errors.js'
import { builder } from './builder.js'
import { encodeCursor, forwardPage, pageArgs, toConnection } from './paging.js'
import { ChatMessageRef, DefinitionSourceEnum, OutputContractRef, PromptRef } from './prompt.js'
import { ToolSettingsRef } from './tool.js'

export const PromptVersionRef = builder.objectRef<PromptVersion>('PromptVersion').implement({
  description: 'One stored version of a prompt: its definition exactly as it was saved. Versions are never changed or removed.',
  fields: (t) => ({
    promptId: t.exposeID('promptId', { description: 'The prompt it is a version of.' }),
    version: t.exposeInt('version', { description: 'Its number: 1 for the first definition, one more for each change.' }),
    source: t.field({ type: DefinitionSourceEnum, description: 'Saved from a catalog file or through the API.', resolve: (v) => v.source }),
    definitionHash: t.exposeString('definitionHash', { description: 'sha256 of the canonical definition.' }),
    definition: t.field({
      type: 'JSON',
      description: 'The canonical definition that definitionHash covers.',
      resolve: (v) => v.definition,
    }),
    messages: t.field({ type: [ChatMessageRef], description: 'Its message templates.', resolve: (v) => v.definition.messages }),
    output: t.field({ type: OutputContractRef, description: 'What its runs must answer.', resolve: (v) => v.definition.output }),
    tooling: t.field({ type: ToolSettingsRef, description: 'The tools its runs may call, and how.', resolve: (v) => v.definition }),
    variables: t.exposeStringList('variables', { description: 'Variables its templates refer to, in order of first use.' }),
    authorKeyId: t.exposeString('authorKeyId', {
      nullable: true,
      description: 'The API key that saved it (its id, a sha256 prefix); null for catalog files and where keys are off.',
    }),
    createdAt: t.field({ type: 'DateTime', description: 'When it was saved.', resolve: (v) => v.createdAt }),
  }),
})

const PromptVersionConnection = builder.connectionObject({ type: PromptVersionRef, name: 'PromptVersionConnection' })
const versionCursor = (v: PromptVersion) => encodeCursor('promptVersion', String(v.version))

builder.objectFields(PromptRef, (t) => ({
  versions: t.field({
    type: PromptVersionConnection,
    description: 'Every stored version, newest first (a shadowed catalog prompt’s versions included). Forward paging: first and after.',
    args: pageArgs(t.arg),
    resolve: async (prompt, args, ctx) => {
      const { first, after } = forwardPage(args, 'promptVersion', 1)
      const before = after ? Number(after[0]) : null
      if (before !== null && !Number.isInteger(before)) throw InvalidRequestError.at('after', 'not a cursor from this connection')
      const versions = await ctx.services.catalog.promptVersions(ctx.tenantId, prompt.id, before, first + 1)
      return toConnection(versions, first, after !== null, versionCursor)
    },
  }),
  versionAt: t.field({
    type: PromptVersionRef,
    nullable: true,
    description: 'One stored version by its number, or null when there is none.',
    args: { number: t.arg.int({ required: true, description: 'The version number.' }) },
    resolve: (prompt, { number }, ctx) => ctx.services.catalog.promptVersion(ctx.tenantId, prompt.id, number),
  }),
}))
