import { createRequire } from 'node:module'
import { defineConfig } from 'vitest/config'

const require = createRequire(import.meta.url)

export default defineConfig({
  resolve: {
    // graphql 16 has no "exports": Node loads its CommonJS build, Vite would pick index.mjs.
    // One copy only, or `instanceof GraphQLError` and schema checks break across the two.
    alias: [
      { find: /^graphql$/, replacement: require.resolve('graphql') },
      // the package's own client, from source (its "exports" entry points at the build)
      { find: /^promptline\/client$/, replacement: new URL('./src/client/index.ts', import.meta.url).pathname },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
