// serverLocation.js — which fsl-lsp the extension starts: `fsl.serverPath` when set, else the
// fsl-lsp installed next to fslc (`fsl.fslcPath`, found as a shell would), else the PATH's.
//
// No `vscode` import, and the file system comes in as an argument, so Node's test runner
// checks every branch. An explicit `fsl.serverPath` that does not name an executable is an
// error, not a reason to try the others: the user asked for that one.
'use strict';

const fs = require('fs');
const path = require('path');

/** The real file system's answers: is FILE an executable file, and what does it resolve to. */
const hostSystem = {
  isExecutable(file) {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  },
  realpath(file) {
    try {
      return fs.realpathSync(file);
    } catch {
      return file;
    }
  },
};

/** `~/x` and `${workspaceFolder}/x` as VS Code's users write them in settings. */
function expand(setting, { home, workspaceFolder }) {
  let value = setting.trim();
  if (home && (value === '~' || value.startsWith('~/'))) value = path.join(home, value.slice(1));
  if (value.includes('${workspaceFolder}')) {
    if (!workspaceFolder) return { error: `'${setting}' uses \${workspaceFolder} but no folder is open` };
    value = value.split('${workspaceFolder}').join(workspaceFolder);
  }
  return { value };
}

/** The directories of a PATH value; empty entries (the current directory) are skipped. */
function pathDirectories(envPath) {
  return (envPath || '').split(path.delimiter).filter((dir) => dir !== '');
}

/**
 * Finds the executable a setting names: a bare name on the PATH, a path (relative ones from
 * the workspace folder) as is. Returns { path } or { error } saying where it looked.
 */
function findExecutable(setting, settingName, context, system) {
  const expanded = expand(setting, context);
  if (expanded.error) return { error: `${settingName}: ${expanded.error}` };
  const value = expanded.value;
  if (!value.includes('/') && !value.includes(path.sep)) {
    for (const dir of pathDirectories(context.envPath)) {
      const candidate = path.join(dir, value);
      if (system.isExecutable(candidate)) return { path: candidate };
    }
    return { error: `${settingName} is '${setting}', which is not on the PATH` };
  }
  if (!path.isAbsolute(value) && !context.workspaceFolder)
    return { error: `${settingName} is the relative path '${setting}' but no folder is open` };
  const resolved = path.resolve(context.workspaceFolder || '/', value);
  if (!system.isExecutable(resolved))
    return { error: `${settingName} is '${setting}' (${resolved}), which is not an executable file` };
  return { path: resolved };
}

const SERVER = 'fsl-lsp';

/**
 * The fsl-lsp to start, from the settings and the environment:
 *   settings: { serverPath, fslcPath }  (strings; empty serverPath means "find it")
 *   context:  { workspaceFolder, envPath, home }
 * Returns { command, from } (from says which rule found it), or { error } with every place
 * looked at and what to set.
 */
function resolveServer(settings, context, system = hostSystem) {
  const serverPath = (settings.serverPath || '').trim();
  if (serverPath !== '') {
    const found = findExecutable(serverPath, 'fsl.serverPath', context, system);
    if (found.error) return { error: `${found.error}; set fsl.serverPath to the fsl-lsp executable` };
    return { command: found.path, from: 'fsl.serverPath' };
  }

  const looked = [];
  const fslcSetting = (settings.fslcPath || '').trim() || 'fslc';
  const fslc = findExecutable(fslcSetting, 'fsl.fslcPath', context, system);
  if (fslc.error) {
    looked.push(fslc.error);
  } else {
    // An fslc on the PATH may be a link into its installation (/usr/local/bin/fslc ->
    // /opt/fslc/bin/fslc): fsl-lsp is installed next to the real one.
    const directories = [path.dirname(fslc.path), path.dirname(system.realpath(fslc.path))];
    const candidates = [...new Set(directories.map((dir) => path.join(dir, SERVER)))];
    const next = candidates.find((candidate) => system.isExecutable(candidate));
    if (next) return { command: next, from: `next to fslc (${fslc.path})` };
    looked.push(`there is no fsl-lsp next to fslc (${candidates.join(', ')})`);
  }

  const onPath = findExecutable(SERVER, 'fsl-lsp', context, system);
  if (onPath.path) return { command: onPath.path, from: 'the PATH' };
  looked.push('the PATH has no fsl-lsp');

  return {
    error: `fsl-lsp, the FSL language server, was not found: fsl.serverPath is not set, ${looked.join(', ')}. ` +
      'Set fsl.serverPath to the fsl-lsp executable, or fsl.fslcPath to an fslc installed with ' +
      'its fsl-lsp (fslc builds it when libmlir-19-dev is installed).',
  };
}

module.exports = { resolveServer, hostSystem };
