import { builder } from './builder.js'
// Each module registers its types on the builder when imported.
import './errors.js'
import './settings.js'
import './prompt.js'
import './prompt-version.js'
import './prompt-label.js'
import './backend.js'
import './profile.js'
import './prepare.js'
import './run.js'
import './queue-entry.js'
import './session.js'
import './budget.js'
import './usage-report.js'
import './events.js'
import './webhook.js'

export const schema = builder.toSchema({ sortSchema: true })
