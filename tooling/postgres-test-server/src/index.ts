export {
  assertPostgresInstalled,
  findFreePort,
  postgresBinDir,
  postgresInstalled,
  startPostgresServer,
} from './postgres-server.js';
export type { PostgresServer, StartPostgresServerOptions, StopMode } from './postgres-server.js';
