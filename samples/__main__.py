"""``python -m samples``: list the samples by category with their one-line descriptions;
``python -m samples sNN [OPTIONS]`` runs sample sNN as ``python -m samples.sNN`` would."""

import runpy
import sys

from samples import CATEGORIES, catalogue, sample_files

if len(sys.argv) > 1:
    short, files = sys.argv[1], sample_files()
    if short not in files:
        why = f"unknown sample {short!r}; choose from {', '.join(files)} (or no argument: the list)"
        print(f"python -m samples: error: {why}", file=sys.stderr)
        sys.exit(2)
    sys.argv = [f"python -m samples.{short}", *sys.argv[2:]]
    runpy.run_module(f"samples.{short}", run_name="__main__", alter_sys=True)
    sys.exit(0)

print("Lantern samples (run: python -m samples.sNN [--help]):")
for category, items in catalogue().items():
    print(f"\n{category}: {CATEGORIES.get(category, 'no category declared')}")
    for info in items:
        print(f"  {info.short}  {info.path.stem:<22} {info.description}")
