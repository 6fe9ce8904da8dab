import { defineConfig } from 'vitest/config';

// The build goes to dist/, which also holds the committed placeholder
// dist/.keep (so `go:embed` works in a fresh checkout). emptyOutDir stays
// false; scripts/build.mjs removes the previous build except .keep.
export default defineConfig({
  oxc: {
    jsx: { runtime: 'automatic', importSource: 'preact' },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: false,
    target: 'es2022',
    sourcemap: false,
    assetsInlineLimit: 0,
  },
  server: {
    // `npm run dev` talks to a running daemon for the API.
    proxy: {
      '/api': { target: 'http://127.0.0.1:4317', changeOrigin: false },
      '/v1': { target: 'http://127.0.0.1:4317' },
      '/health': { target: 'http://127.0.0.1:4317' },
    },
  },
  test: {
    environment: 'happy-dom',
    include: ['test/**/*.test.{ts,tsx}'],
    setupFiles: ['test/setup.ts'],
  },
});
