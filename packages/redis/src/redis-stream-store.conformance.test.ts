import { describeStreamStore } from '@ctx/provider-tests';
import { clusterClient, env, singleClient, uniquePrefix } from '../test/helpers.js';
import { RedisStreamStore } from './redis-stream-store.js';

// One shared client per topology, injected into every store the suite creates; short reads blocks
// so the lease tests notice a dead producer quickly.
const single = singleClient();
const cluster = clusterClient();
const prefix = uniquePrefix('streams');
const blockMs = 200;

describeStreamStore('RedisStreamStore (single node)', {
  create: (options) => new RedisStreamStore({ ...options, client: single, prefix, blockMs }),
  cleanup: (store) => store.close(),
});

describeStreamStore('RedisStreamStore (cluster)', {
  create: (options) => new RedisStreamStore({ ...options, client: cluster, prefix, blockMs }),
  cleanup: (store) => store.close(),
});

describeStreamStore('RedisStreamStore (owned connection from url)', {
  create: (options) => new RedisStreamStore({ ...options, url: `redis://127.0.0.1:${env.port}`, prefix, blockMs }),
  cleanup: (store) => store.close(),
});
