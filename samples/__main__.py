"""``python -m samples``: list the samples by category with their one-line descriptions."""

from samples import CATEGORIES, catalogue

print("Lantern samples (run: python -m samples.sNN [--help]):")
for category, items in catalogue().items():
    print(f"\n{category}: {CATEGORIES.get(category, 'no category declared')}")
    for info in items:
        print(f"  {info.short}  {info.path.stem:<22} {info.description}")
