import type { CodegenConfig } from '@graphql-codegen/cli'

// Typed documents for the operations in test/operations (used by the tests and the examples).
const config: CodegenConfig = {
  schema: 'schema/schema.graphql',
  documents: ['test/operations/**/*.graphql'],
  ignoreNoDocuments: false,
  generates: {
    'test/generated/': {
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: {
        useTypeImports: true,
        enumsAsTypes: true,
        emitLegacyCommonJSImports: false,
        scalars: { JSON: 'unknown', DateTime: 'string' },
      },
    },
  },
  silent: true,
}
export default config
