// load-peer.ts for the CommonJS build (tsup.config.ts puts it in place of load-peer.ts there):
// CommonJS has no top-level await, and require() throws synchronously.
import type * as Peer from '@cfworker/json-schema';
import { peerLoadError } from './missing-peer.js';

let peer: typeof Peer;
try {
  peer = require('@cfworker/json-schema') as typeof Peer;
} catch (error) {
  throw peerLoadError(error);
}

/** `dereference` of the peer. */
export const dereference: typeof Peer.dereference = peer.dereference;
/** `validate` of the peer. */
export const validate: typeof Peer.validate = peer.validate;
