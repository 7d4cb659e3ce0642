// Replaced by the PostgreSQL server setup (tooling/postgres-test-server).
export default function setup(): void {}
