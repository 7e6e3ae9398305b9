import type { PromptInclude } from '../domain/catalog.js'
import { builder } from './builder.js'

export const PromptIncludeRef = builder.objectRef<PromptInclude>('PromptInclude').implement({
  description: 'A prompt included by another ({{> id}}, {{> id@label}}, {{> id#3}}), at the version admission resolved it to.',
  fields: (t) => ({
    key: t.exposeString('key', { description: 'The reference as written: id, id@label or id#version.' }),
    promptId: t.exposeID('promptId', { description: 'The included prompt.' }),
    version: t.exposeInt('version', { description: 'The version used.' }),
    definitionHash: t.exposeString('definitionHash', { description: "sha256 of that version's canonical definition." }),
  }),
})
