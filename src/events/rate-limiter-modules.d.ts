// The limiters' own modules: the package's index loads every store it has (Redis, Mongo, SQL,
// cluster…), about 9 MiB of RSS for nothing (measured).
declare module 'rate-limiter-flexible/lib/RateLimiterMemory.js' {
  import { RateLimiterMemory } from 'rate-limiter-flexible'
  export default RateLimiterMemory
}
declare module 'rate-limiter-flexible/lib/RateLimiterRedis.js' {
  import { RateLimiterRedis } from 'rate-limiter-flexible'
  export default RateLimiterRedis
}
