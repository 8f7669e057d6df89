#!/usr/bin/env node
console.log("deltacells");
