import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Plugin } from 'graphql-yoga'

/** Where `npm run build` (part of npm install and npm start) puts the console: dist/console, from src/server or dist/server. */
const CONSOLE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/console')

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
}

// the page talks to this server only: its own scripts and styles, fetch and WebSocket to its origin
const POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' ws: wss:; base-uri 'none'; frame-ancestors 'none'"

/**
 * `GET /console/…`: the web console, a static app served from memory once read. Hashed assets
 * are cached for good; any other path is the app's page (it routes in the browser).
 */
export function useConsole(dir = CONSOLE_DIR): Plugin {
  const files = new Map<string, Promise<Uint8Array<ArrayBuffer> | null>>()
  const read = (file: string) => {
    let found = files.get(file)
    if (!found) {
      found = readFile(path.join(dir, file)).then(
        (bytes) => Uint8Array.from(bytes),
        () => null,
      )
      files.set(file, found)
    }
    return found
  }
  return {
    async onRequest({ url, request, endResponse, fetchAPI }) {
      if (url.pathname !== '/console' && !url.pathname.startsWith('/console/')) return
      if (request.method !== 'GET' && request.method !== 'HEAD') return endResponse(new fetchAPI.Response(null, { status: 405 }))
      if (url.pathname === '/console') return endResponse(fetchAPI.Response.redirect(new URL('/console/', url), 308))
      const asked = path.posix.normalize(url.pathname.slice('/console/'.length))
      const asset = asked.startsWith('assets/') && !asked.includes('..') ? asked : null
      const file = asset ?? 'index.html'
      const body = await read(file)
      if (!body) {
        const missing = asset ? 'no such file' : 'the console is not built: run npm run build'
        return endResponse(new fetchAPI.Response(missing, { status: asset ? 404 : 503, headers: { 'content-type': 'text/plain' } }))
      }
      const headers = {
        'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
        'cache-control': asset ? 'public, max-age=31536000, immutable' : 'no-cache',
        'content-security-policy': POLICY,
        'x-content-type-options': 'nosniff',
      }
      endResponse(new fetchAPI.Response(body, { headers }))
    },
  }
}
