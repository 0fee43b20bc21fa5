from . import utils
from .utils import safe_exp as reexported_exp
