"""Layer 3: decisions about layouts — bitcasts, the normal form, views, size conditions.

One way inside: ``views`` -> ``normal_form`` -> ``bitcast`` <- ``conditions``.
"""
