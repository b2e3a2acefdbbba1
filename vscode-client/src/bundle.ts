// The server the .vsix carries: torchls and its pure-Python dependencies in `bundled/libs` (written by
// scripts/bundle_server.py at packaging time), run by any Python >= 3.10 with that folder first on PYTHONPATH.
// Without the folder (the extension run from its source tree, never packaged) the chosen Python's own installed
// torchls runs instead: that is the development set-up.
import * as fs from "fs";
import * as path from "path";

// Tells the server which PYTHONPATH entry is the bundle, so that jedi's process in the project's interpreter
// leaves it out (the project's `import yaml` must not resolve to torchls's copy). Read by torchls.jedi_host.
const BUNDLED_LIBS_ENV = "TORCHLS_BUNDLED_LIBS";

export interface ServerLibraries {
  libs: string | undefined; // undefined: no bundle, use an installed torchls
  env: NodeJS.ProcessEnv; // the environment the server (and the preflight check) runs in
}

export function serverLibraries(extensionPath: string): ServerLibraries {
  const libs = path.join(extensionPath, "bundled", "libs");
  if (!fs.existsSync(path.join(libs, "torchls", "__init__.py"))) {
    return { libs: undefined, env: { ...process.env } };
  }
  const inherited = process.env.PYTHONPATH;
  return {
    libs,
    env: {
      ...process.env,
      PYTHONPATH: inherited ? `${libs}${path.delimiter}${inherited}` : libs,
      [BUNDLED_LIBS_ENV]: libs,
    },
  };
}
