/** `load`, run on the first call and shared after: for a module a start need not wait for. */
export function onFirstUse<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | null = null
  return () => {
    loaded ??= load()
    return loaded
  }
}
