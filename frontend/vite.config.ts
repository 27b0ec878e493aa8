import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// `npm run dev` serves the playground on its own port and hands /api (HTTP and the /api/events WebSocket)
// to the service. The service checks Origin (CSRF for writes, the WebSocket's origin check), so the proxy
// presents requests as coming from the service's own origin.
const target = process.env.API_TARGET ?? "http://127.0.0.1:3470";

export default defineConfig({
  plugins: [react()],
  server: {
    port: 5173,
    strictPort: true,
    proxy: {
      "/api": {
        target,
        ws: true,
        changeOrigin: true,
        configure(proxy) {
          proxy.on("proxyReq", (request) => {
            if (request.getHeader("origin")) request.setHeader("origin", target);
          });
          proxy.on("proxyReqWs", (request) => {
            if (request.getHeader("origin")) request.setHeader("origin", target);
          });
        },
      },
    },
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    rolldownOptions: {
      output: {
        // React and the router change less often than the app: a separate file stays cached across releases.
        codeSplitting: {
          groups: [
            {
              name: "react",
              test: /node_modules[\\/](react|react-dom|react-router|scheduler|cookie|set-cookie-parser)[\\/]/,
            },
          ],
        },
      },
    },
  },
  test: {
    environment: "node", // files that need a DOM say `@vitest-environment jsdom`
    globals: true, // lets Testing Library unmount between tests
    include: ["src/**/*.test.{ts,tsx}"],
    restoreMocks: true,
  },
});
