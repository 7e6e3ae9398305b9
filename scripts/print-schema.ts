// Writes the files printed from the Pothos schema: the SDL and the possibleTypes map.
import { writeFileSync } from 'node:fs'
import { schemaFiles } from './schema-files.js'

for (const [file, content] of Object.entries(schemaFiles())) writeFileSync(new URL(`../${file}`, import.meta.url), content)
