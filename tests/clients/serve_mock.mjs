// Runs the mock provider on its own for the Python tests: prints its URL on
// the first line of stdout and serves until SIGTERM.
import { startMockProvider } from './mock_provider.mjs';

const mock = await startMockProvider();
process.stdout.write(mock.url + '\n');
process.on('SIGTERM', () => mock.close().then(() => process.exit(0)));
