// A producer that a test kills: opens a turn's stream, appends two chunks, says so, then waits
// until the parent sends SIGKILL (its writer renews the lease meanwhile). Runs the built package.
// argv: <redis url> <key prefix> <session id> <turn id> <lease ms>
import { RedisStreamStore } from '@ctx/redis';

const [url, prefix, sessionId, turnId, leaseMs] = process.argv.slice(2);
const store = new RedisStreamStore({ url, prefix, leaseMs: Number(leaseMs) });
const opened = await store.open({ sessionId, turnId });
if (!opened.created) throw new Error('the stream was running already');
await opened.writer.append([
  { type: 'text-delta', delta: 'x' },
  { type: 'text-delta', delta: 'y' },
]);
process.stdout.write('appended\n');
setInterval(() => {}, 1000); // alive, renewing, until killed
