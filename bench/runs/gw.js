// bench/runs/gw.js - the graphile-worker side of bench/runs/run.sh (the
// package is installed by run.sh into a temp dir, never committed).
//   node gw.js schema CONN            install graphile-worker's schema
//   node gw.js load CONN N            queue N no-op jobs (one statement)
//   node gw.js work CONN C            a worker process, concurrency C, until SIGTERM
//   node gw.js latency CONN N C       N sequential jobs: add_job -> task start, ms
const { run, runMigrations, makeWorkerUtils } = require("graphile-worker");
const { Pool } = require("pg");

const [mode, conn, a, b] = process.argv.slice(2);
const noop = async () => {};

async function main() {
  if (mode === "schema") {
    await runMigrations({ connectionString: conn });
  } else if (mode === "load") {
    const pool = new Pool({ connectionString: conn });
    await pool.query(
      "SELECT graphile_worker.add_job('noop', json_build_object('i', i)) FROM generate_series(1, $1::int) i",
      [Number(a)],
    );
    await pool.end();
  } else if (mode === "work") {
    const runner = await run({
      connectionString: conn,
      concurrency: Number(a),
      pollInterval: 1000,
      noHandleSignals: false,
      taskList: { noop },
    });
    await runner.promise;
  } else if (mode === "latency") {
    const n = Number(a);
    let waiting = null;
    const runner = await run({
      connectionString: conn,
      concurrency: Number(b),
      pollInterval: 1000,
      noHandleSignals: true,
      taskList: {
        mark: async (payload) => {
          const t = process.hrtime.bigint();
          if (waiting && waiting.i === payload.i) waiting.resolve(t);
        },
      },
    });
    const utils = await makeWorkerUtils({ connectionString: conn });
    const lat = [];
    for (let i = 0; i < n; i++) {
      const started = new Promise((resolve) => (waiting = { i, resolve }));
      const t0 = process.hrtime.bigint();
      await utils.addJob("mark", { i });
      const t1 = await started;
      lat.push(Number(t1 - t0) / 1e6);
    }
    await utils.release();
    await runner.stop();
    lat.sort((x, y) => x - y);
    console.log(JSON.stringify({ n, p50_ms: +lat[n >> 1].toFixed(3),
      p99_ms: +lat[Math.floor(n * 0.99)].toFixed(3), max_ms: +lat[n - 1].toFixed(3) }));
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
