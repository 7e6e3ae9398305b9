import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

// The console is built into dist/console and served by the server at /console (no CDN, no second server).
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  logLevel: 'warn',
  resolve: {
    alias: { 'promptline/client': fileURLToPath(new URL('../src/client/index.ts', import.meta.url)) },
  },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    // the client's Node fallback for WebSocket (`ws`) is never loaded in a browser
    rollupOptions: { external: ['ws'] },
  },
})
