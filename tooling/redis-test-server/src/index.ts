export {
  assertRedisInstalled,
  findFreePort,
  rawCommand,
  redisInstalled,
  startRedisCluster,
  startRedisServer,
} from './redis-servers.js';
export type { RedisCluster, RedisServer, StartRedisServerOptions } from './redis-servers.js';
