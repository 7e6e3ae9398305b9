import { useEffect, useState } from 'preact/hooks'

/** Calls `load` now and every `intervalMs` while mounted (and again when `deps` change); the latest result or error. */
export function usePolled<T>(load: () => Promise<T>, intervalMs: number, deps: unknown[]): { value: T | null; error: unknown } {
  const [state, setState] = useState<{ value: T | null; error: unknown }>({ value: null, error: null })
  useEffect(() => {
    let live = true
    let timer: ReturnType<typeof setTimeout> | undefined
    const tick = () =>
      load().then(
        (value) => live && setState({ value, error: null }),
        (error: unknown) => live && setState((s) => ({ ...s, error })),
      ).finally(() => {
        if (live && intervalMs > 0) timer = setTimeout(tick, intervalMs)
      })
    void tick()
    return () => {
      live = false
      clearTimeout(timer)
    }
    // biome-ignore lint/correctness/useExhaustiveDependencies: the caller names what reloads it
  }, deps)
  return state
}

/** Which page the location hash names. */
export interface Route {
  sessionId: string | null
  runId: string | null
  keys: boolean
  /** `#/experiments`, `#/experiments/<id>`, or `#/experiments/compare/<baseId>/<candidateId>`. */
  experiments: { id: string | null; compare: [string, string] | null } | null
}

/** The location hash as a route: `#/sessions/<id>`, `#/sessions/<id>/runs/<runId>`, `#/keys`, or an experiments page. */
export function useRoute(): Route {
  const read = (): Route => {
    const [, page, a, b, c] = location.hash.split('/').map(decodeURIComponent)
    const none = { sessionId: null, runId: null, keys: false, experiments: null }
    if (page === 'keys') return { ...none, keys: true }
    if (page === 'experiments') {
      return { ...none, experiments: a === 'compare' && b && c ? { id: null, compare: [b, c] } : { id: a || null, compare: null } }
    }
    return { ...none, sessionId: a || null, runId: c || null }
  }
  const [route, setRoute] = useState(read)
  useEffect(() => {
    const changed = () => setRoute(read())
    addEventListener('hashchange', changed)
    return () => removeEventListener('hashchange', changed)
  }, [])
  return route
}

export const sessionHref = (sessionId: string) => `#/sessions/${encodeURIComponent(sessionId)}`
export const runHref = (sessionId: string, runId: string) => `${sessionHref(sessionId)}/runs/${encodeURIComponent(runId)}`
