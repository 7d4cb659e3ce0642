export { HttpError } from './http-error.js';
export { DEFAULT_MAX_BODY_BYTES, parseJsonBody, readBody, readJsonBody } from './request-body.js';
export type { JsonBody, ReadBodyOptions } from './request-body.js';
export { headerRecord, isJsonObject, recordRequest } from './recorded-request.js';
export type { JsonObject, RecordedHttpRequest } from './recorded-request.js';
export { sendJson, sendJsonError } from './json-reply.js';
export type { ErrorFormat } from './json-reply.js';
export { startLocalHttpServer } from './local-http-server.js';
export type { LocalHttpServer, LocalHttpServerOptions, RequestHandler } from './local-http-server.js';
