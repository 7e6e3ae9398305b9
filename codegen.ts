import type { CodegenConfig } from '@graphql-codegen/cli'

/** The scalar map every codegen consumer of the schema wants (docs/clients.md shows it). */
const scalars = (jsonType: string) => ({ DateTime: 'string', JSON: jsonType })
const shared = { useTypeImports: true, enumsAsTypes: true, emitLegacyCommonJSImports: false }

// Typed documents for the operations of promptline/client, the console, and the tests.
const config: CodegenConfig = {
  schema: 'schema/schema.graphql',
  ignoreNoDocuments: false,
  generates: {
    'src/client/generated/': {
      documents: ['src/client/**/*.graphql'],
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: { ...shared, documentMode: 'string', scalars: scalars('../json.js#JsonValue') },
    },
    'console/src/generated/': {
      documents: ['console/src/**/*.graphql'],
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: { ...shared, documentMode: 'string', scalars: scalars('unknown') },
    },
    'test/generated/': {
      documents: ['test/operations/**/*.graphql'],
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: { ...shared, scalars: scalars('unknown') },
    },
  },
  silent: true,
}
export default config
