import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadDotEnv } from "./dotEnv";

describe("loadDotEnv: .env under the real environment", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "keelson-dotenv-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("fills what the real environment leaves unset, and nothing it set (an empty value included)", () => {
    writeFileSync(
      join(dir, ".env"),
      '# a comment\nKEELSON_HOST=0.0.0.0\nKEELSON_AUTH=off\nTEMPORAL_NAMESPACE="quoted ns"\nDATABASE_URL=postgres://file\n',
    );
    const env: NodeJS.ProcessEnv = { KEELSON_AUTH: "on", DATABASE_URL: "" };
    const result = loadDotEnv(env, dir);
    expect(result).toEqual({
      file: join(dir, ".env"),
      loaded: true,
      applied: ["KEELSON_HOST", "TEMPORAL_NAMESPACE"],
    });
    expect(env).toEqual({
      KEELSON_AUTH: "on",
      DATABASE_URL: "",
      KEELSON_HOST: "0.0.0.0",
      TEMPORAL_NAMESPACE: "quoted ns",
    });
  });

  it("reads the file KEELSON_ENV_FILE names (relative to the cwd), and none when it is set empty", () => {
    writeFileSync(join(dir, "prod.env"), "KEELSON_LOG_LEVEL=debug\n");
    writeFileSync(join(dir, ".env"), "KEELSON_LOG_LEVEL=warn\n");
    const named: NodeJS.ProcessEnv = { KEELSON_ENV_FILE: "prod.env" };
    expect(loadDotEnv(named, dir).applied).toEqual(["KEELSON_LOG_LEVEL"]);
    expect(named.KEELSON_LOG_LEVEL).toBe("debug");
    const none: NodeJS.ProcessEnv = { KEELSON_ENV_FILE: "" };
    expect(loadDotEnv(none, dir)).toEqual({
      file: undefined,
      loaded: false,
      applied: [],
    });
    expect(none.KEELSON_LOG_LEVEL).toBeUndefined();
  });

  it("runs on the defaults without a .env, but refuses a named file that is missing", () => {
    const env: NodeJS.ProcessEnv = {};
    expect(loadDotEnv(env, dir)).toEqual({
      file: join(dir, ".env"),
      loaded: false,
      applied: [],
    });
    expect(env).toEqual({});
    expect(() => loadDotEnv({ KEELSON_ENV_FILE: "missing.env" }, dir)).toThrow(
      /cannot read the environment file .*missing\.env/,
    );
  });
});
