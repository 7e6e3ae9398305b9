/** Enum values with their descriptions; a Record keyed by the domain's union makes a missing one a type error. */
export function describedValues<T extends string>(descriptions: Record<T, string>): Record<T, { description: string }> {
  return Object.fromEntries(Object.entries<string>(descriptions).map(([value, description]) => [value, { description }])) as Record<
    T,
    { description: string }
  >
}
