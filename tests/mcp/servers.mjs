// The MCP tests' servers: the node suites' shared ones (tests/servers.mjs).
export { Redis, Compactd, ROOT } from '../servers.mjs';
