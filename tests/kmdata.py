"""Where the tests' and benchmarks' data sets are: $KM_DATA, else the
repository's data/ folder (data/README.md says where each file comes from).

data_file(name) is the path of one of them; a file that is not there is a
clear error naming the path and how to get it, not a bare FileNotFoundError.
"""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIR = os.environ.get("KM_DATA") or os.path.join(ROOT, "data")


class MissingData(Exception):
    pass


def data_file(name):
    path = os.path.join(DIR, name)
    if not os.path.isfile(path):
        raise MissingData(
            f"missing data file {path}: it ships in the repository's data/ "
            f"folder (see data/README.md); restore it with `git checkout -- "
            f"data/{name}`, or set KM_DATA to a folder that holds it")
    return path
