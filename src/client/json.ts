/** A value of the JSON scalar (settings, variables, parsed output, metadata). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }
