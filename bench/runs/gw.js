// bench/runs/gw.js - the graphile-worker side of bench/runs/run.sh (the
// package is installed by run.sh into a temp dir, never committed).
//   node gw.js schema CONN            install graphile-worker's schema
//   node gw.js load CONN N            queue N no-op jobs (add_jobs, 5000 a statement)
//   node gw.js work CONN C [BATCH]    a worker process, concurrency C, until SIGTERM;
//                                     BATCH > 1 turns on graphile-worker's own batching
//                                     (localQueue.size = BATCH, completeJobBatchDelay 0)
//   node gw.js latency CONN N C       N sequential jobs: add_job -> task start, ms
const { run, runMigrations, makeWorkerUtils } = require("graphile-worker");
const { Pool } = require("pg");

const [mode, conn, a, b] = process.argv.slice(2);
const noop = async () => {};
const batching = (size) =>
  size > 1 ? { preset: { worker: { localQueue: { size }, completeJobBatchDelay: 0 } } } : {};

async function main() {
  if (mode === "schema") {
    await runMigrations({ connectionString: conn });
  } else if (mode === "load") {
    // add_jobs in chunks (one add_job per row in one statement is quadratic)
    const pool = new Pool({ connectionString: conn });
    const n = Number(a);
    for (let done = 0; done < n; done += 5000) {
      await pool.query(
        "SELECT graphile_worker.add_jobs(array(SELECT ROW('noop', json_build_object('i', i)," +
          " NULL, NULL, NULL, NULL, NULL, NULL)::graphile_worker.job_spec" +
          " FROM generate_series($1::int, $2::int) i))",
        [done + 1, Math.min(n, done + 5000)],
      );
    }
    await pool.end();
  } else if (mode === "work") {
    const runner = await run({
      connectionString: conn,
      concurrency: Number(a),
      pollInterval: 1000,
      noHandleSignals: false,
      taskList: { noop },
      ...batching(Number(b || 0)),
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
