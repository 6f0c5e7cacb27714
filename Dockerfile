# ctxgate gateway image: Node 20 slim, production dependencies only, runs as the unprivileged `node` user.
# There is no build step: tsx (a production dependency) runs the TypeScript sources.
#   docker build -t ctxgate .
#   docker run -p 8080:8080 -v $PWD/my-config.yaml:/etc/ctxgate/config.yaml:ro ctxgate
FROM node:20-slim

ENV NODE_ENV=production
WORKDIR /app

COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY bin ./bin
COPY cli ./cli
COPY gateway ./gateway
COPY middleware ./middleware
COPY kvplanner ./kvplanner
COPY loadtest ./loadtest
COPY configs ./configs

# The usage ledger, its spool and traffic captures are the only files ctxgate writes.
RUN mkdir -p /var/lib/ctxgate && chown node:node /var/lib/ctxgate
USER node
WORKDIR /var/lib/ctxgate

EXPOSE 8080
# gateway/node-flags.ts: a young generation sized for the gateway's per-call allocation (the c1 tail),
# and V8's GC helper threads sized to the cores (under a CPU quota, override this command line with
# --v8-pool-size=quota-1: NODE_OPTIONS cannot, node's command line wins; docs/deployment.md).
ENTRYPOINT ["node", "--max-semi-space-size=64", "--v8-pool-size=0", "/app/bin/ctxgate.js"]
CMD ["serve", "--config", "/etc/ctxgate/config.yaml"]
