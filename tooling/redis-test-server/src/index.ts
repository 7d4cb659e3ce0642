export {
  assertRedisInstalled,
  clusterNodes,
  findFreePort,
  rawCommand,
  redisInstalled,
  startRedisCluster,
  startRedisServer,
} from './redis-servers.js';
export type { ClusterNodeInfo, RedisCluster, RedisServer, StartRedisClusterOptions, StartRedisServerOptions } from './redis-servers.js';
