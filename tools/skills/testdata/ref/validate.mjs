// Runs the Agent Skills reference validator (npm skills-ref, pinned in package.json) over the
// skill folders given as arguments and prints {folder: [problems]} as JSON for
// TestAgreesWithReferenceValidator.
import { validate } from "skills-ref";

const out = {};
for (const dir of process.argv.slice(2)) {
  out[dir] = await validate(dir);
}
process.stdout.write(JSON.stringify(out));
