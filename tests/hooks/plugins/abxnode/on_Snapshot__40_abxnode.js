#!/usr/bin/env -S abxpkg run --script --deps-from=./config.json:required_binaries node
// Test hook run as abx-plugins' Node hooks are: it needs Node >= 22 (this machine's Debian has 20).
const fs = require('fs');
const report = {version: process.version, execPath: process.execPath, nodeBinary: process.env.NODE_BINARY};
fs.writeFileSync('node.json', JSON.stringify(report));
console.log(JSON.stringify({type: 'ArchiveResult', status: 'succeeded', output_str: `node ${process.version}`, output_json: report}));
