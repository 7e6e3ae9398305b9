// Preloaded into the benchmarked server with --profile (node --import): starts V8's CPU profiler
// on the bench's 'profile-start' message and, on 'profile-stop', writes the profile to the path
// the message names and answers 'profile-written'. So a profile covers one level, not the
// server's whole life.
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector'

const session = new Session()
session.connect()
const post = (method, params) =>
  new Promise((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))))

process.on('message', async (message) => {
  if (message?.type === 'profile-start') {
    await post('Profiler.enable')
    await post('Profiler.setSamplingInterval', { interval: 200 })
    await post('Profiler.start')
    process.send({ type: 'profile-started' })
  } else if (message?.type === 'profile-stop') {
    const { profile } = await post('Profiler.stop')
    writeFileSync(message.file, JSON.stringify(profile))
    process.send({ type: 'profile-written' })
  }
})
