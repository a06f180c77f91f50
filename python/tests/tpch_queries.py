"""TPC-H's 22 queries as a pandas user writes them, run unchanged on pandas and on
``ares.dataframe``: each takes a function that reads a table (with pandas or with
``ares.dataframe``) and returns a frame or a (lazy) scalar. Literals are pandas values
(``pd.Timestamp``, ISO strings), as a pandas program has them: pandas compares a
datetime64 column with no ``datetime.date``. Parameters are the specification's validation values;
``FRACTION`` of Q11 is the same in SQL (see ``tpch_sql.py``)."""

import numpy as np
import pandas as pd

# Q11's fraction: the specification's 0.0001 / SF at SF 0.1.
FRACTION = 0.001


def q1(t):
    li = t("lineitem")
    li = li[li.l_shipdate <= pd.Timestamp("1998-12-01") - pd.Timedelta(days=90)]
    li = li.assign(disc_price=li.l_extendedprice * (1 - li.l_discount))
    li = li.assign(charge=li.disc_price * (1 + li.l_tax))
    r = li.groupby(["l_returnflag", "l_linestatus"], as_index=False).agg(
        sum_qty=("l_quantity", "sum"),
        sum_base_price=("l_extendedprice", "sum"),
        sum_disc_price=("disc_price", "sum"),
        sum_charge=("charge", "sum"),
        avg_qty=("l_quantity", "mean"),
        avg_price=("l_extendedprice", "mean"),
        avg_disc=("l_discount", "mean"),
        count_order=("l_orderkey", "size"),
    )
    return r.sort_values(["l_returnflag", "l_linestatus"])


def q2(t):
    part, partsupp = t("part"), t("partsupp")
    p = part[(part.p_size == 15) & part.p_type.str.endswith("BRASS")]
    region = t("region")
    eu = region[region.r_name == "EUROPE"].merge(t("nation"), left_on="r_regionkey", right_on="n_regionkey")
    s = eu.merge(t("supplier"), left_on="n_nationkey", right_on="s_nationkey")
    ps = partsupp.merge(s, left_on="ps_suppkey", right_on="s_suppkey")
    j = p.merge(ps, left_on="p_partkey", right_on="ps_partkey")
    cheapest = j.groupby("p_partkey", as_index=False).agg(min_cost=("ps_supplycost", "min"))
    j = j.merge(cheapest, on="p_partkey")
    j = j[j.ps_supplycost == j.min_cost]
    cols = ["s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address", "s_phone", "s_comment"]
    j = j.sort_values(["s_acctbal", "n_name", "s_name", "p_partkey"], ascending=[False, True, True, True])
    return j[cols].head(100)


def q3(t):
    customer, orders, lineitem = t("customer"), t("orders"), t("lineitem")
    c = customer[customer.c_mktsegment == "BUILDING"]
    o = orders[orders.o_orderdate < pd.Timestamp("1995-03-15")]
    li = lineitem[lineitem.l_shipdate > pd.Timestamp("1995-03-15")]
    j = c.merge(o, left_on="c_custkey", right_on="o_custkey").merge(li, left_on="o_orderkey", right_on="l_orderkey")
    j["revenue"] = j.l_extendedprice * (1 - j.l_discount)
    r = j.groupby(["l_orderkey", "o_orderdate", "o_shippriority"], as_index=False).revenue.sum()
    r = r.sort_values(["revenue", "o_orderdate"], ascending=[False, True]).head(10)
    return r[["l_orderkey", "revenue", "o_orderdate", "o_shippriority"]]


def q4(t):
    orders, lineitem = t("orders"), t("lineitem")
    o = orders[(orders.o_orderdate >= "1993-07-01") & (orders.o_orderdate < "1993-10-01")]
    late = lineitem[lineitem.l_commitdate < lineitem.l_receiptdate]
    o = o[o.o_orderkey.isin(late.l_orderkey)]
    r = o.groupby("o_orderpriority").size().reset_index(name="order_count")
    return r.sort_values("o_orderpriority")


def q5(t):
    orders = t("orders")
    o = orders[(orders.o_orderdate >= pd.Timestamp("1994-01-01")) & (orders.o_orderdate < pd.Timestamp("1995-01-01"))]
    region = t("region")
    j = (
        region[region.r_name == "ASIA"]
        .merge(t("nation"), left_on="r_regionkey", right_on="n_regionkey")
        .merge(t("customer"), left_on="n_nationkey", right_on="c_nationkey")
        .merge(o, left_on="c_custkey", right_on="o_custkey")
        .merge(t("lineitem"), left_on="o_orderkey", right_on="l_orderkey")
        .merge(t("supplier"), left_on=["l_suppkey", "n_nationkey"], right_on=["s_suppkey", "s_nationkey"])
    )
    j["revenue"] = j.l_extendedprice * (1 - j.l_discount)
    r = j.groupby("n_name", as_index=False).revenue.sum()
    return r.sort_values("revenue", ascending=False)


def q6(t):
    li = t("lineitem")
    li = li[
        (li.l_shipdate >= pd.Timestamp("1994-01-01"))
        & (li.l_shipdate < pd.Timestamp("1995-01-01"))
        & li.l_discount.between(0.05, 0.07)
        & (li.l_quantity < 24)
    ]
    return (li.l_extendedprice * li.l_discount).sum()


def q7(t):
    nation = t("nation")
    n1 = nation[["n_nationkey", "n_name"]].rename(columns={"n_nationkey": "s_nationkey", "n_name": "supp_nation"})
    n2 = nation[["n_nationkey", "n_name"]].rename(columns={"n_nationkey": "c_nationkey", "n_name": "cust_nation"})
    lineitem = t("lineitem")
    li = lineitem[lineitem.l_shipdate.between(pd.Timestamp("1995-01-01"), pd.Timestamp("1996-12-31"))]
    j = (
        li.merge(t("supplier"), left_on="l_suppkey", right_on="s_suppkey")
        .merge(t("orders"), left_on="l_orderkey", right_on="o_orderkey")
        .merge(t("customer"), left_on="o_custkey", right_on="c_custkey")
        .merge(n1, on="s_nationkey")
        .merge(n2, on="c_nationkey")
    )
    j = j[
        ((j.supp_nation == "FRANCE") & (j.cust_nation == "GERMANY"))
        | ((j.supp_nation == "GERMANY") & (j.cust_nation == "FRANCE"))
    ]
    j["l_year"] = j.l_shipdate.dt.year
    j["volume"] = j.l_extendedprice * (1 - j.l_discount)
    r = j.groupby(["supp_nation", "cust_nation", "l_year"], as_index=False).volume.sum()
    return r.rename(columns={"volume": "revenue"}).sort_values(["supp_nation", "cust_nation", "l_year"])


def q8(t):
    part, orders, nation, region = t("part"), t("orders"), t("nation"), t("region")
    p = part[part.p_type == "ECONOMY ANODIZED STEEL"]
    o = orders[orders.o_orderdate.between(pd.Timestamp("1995-01-01"), pd.Timestamp("1996-12-31"))]
    america = region[region.r_name == "AMERICA"].merge(nation, left_on="r_regionkey", right_on="n_regionkey")
    c = t("customer").merge(america[["n_nationkey"]], left_on="c_nationkey", right_on="n_nationkey")
    supp_nation = nation[["n_nationkey", "n_name"]].rename(columns={"n_nationkey": "s_nationkey", "n_name": "nation"})
    j = (
        t("lineitem").merge(p, left_on="l_partkey", right_on="p_partkey")
        .merge(o, left_on="l_orderkey", right_on="o_orderkey")
        .merge(c, left_on="o_custkey", right_on="c_custkey")
        .merge(t("supplier"), left_on="l_suppkey", right_on="s_suppkey")
        .merge(supp_nation, on="s_nationkey")
    )
    j["o_year"] = j.o_orderdate.dt.year
    j["volume"] = j.l_extendedprice * (1 - j.l_discount)
    j["brazil"] = j.volume.where(j.nation == "BRAZIL", 0)
    r = j.groupby("o_year", as_index=False).agg(brazil=("brazil", "sum"), total=("volume", "sum"))
    r["mkt_share"] = r.brazil / r.total
    return r[["o_year", "mkt_share"]].sort_values("o_year")


def q9(t):
    part = t("part")
    p = part[part.p_name.str.contains("green")]
    j = (
        t("lineitem").merge(p, left_on="l_partkey", right_on="p_partkey")
        .merge(t("supplier"), left_on="l_suppkey", right_on="s_suppkey")
        .merge(t("partsupp"), left_on=["l_suppkey", "l_partkey"], right_on=["ps_suppkey", "ps_partkey"])
        .merge(t("orders"), left_on="l_orderkey", right_on="o_orderkey")
        .merge(t("nation"), left_on="s_nationkey", right_on="n_nationkey")
    )
    j["o_year"] = j.o_orderdate.dt.year
    j["amount"] = j.l_extendedprice * (1 - j.l_discount) - j.ps_supplycost * j.l_quantity
    r = j.groupby(["n_name", "o_year"], as_index=False).amount.sum()
    r = r.rename(columns={"n_name": "nation", "amount": "sum_profit"})
    return r.sort_values(["nation", "o_year"], ascending=[True, False])


def q10(t):
    orders, lineitem = t("orders"), t("lineitem")
    o = orders[(orders.o_orderdate >= pd.Timestamp("1993-10-01")) & (orders.o_orderdate < pd.Timestamp("1994-01-01"))]
    li = lineitem[lineitem.l_returnflag == "R"]
    j = (
        t("customer").merge(o, left_on="c_custkey", right_on="o_custkey")
        .merge(li, left_on="o_orderkey", right_on="l_orderkey")
        .merge(t("nation"), left_on="c_nationkey", right_on="n_nationkey")
    )
    j["revenue"] = j.l_extendedprice * (1 - j.l_discount)
    keys = ["c_custkey", "c_name", "c_acctbal", "c_phone", "n_name", "c_address", "c_comment"]
    r = j.groupby(keys, as_index=False).revenue.sum()
    r = r.sort_values("revenue", ascending=False).head(20)
    return r[["c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone", "c_comment"]]


def q11(t):
    nation = t("nation")
    s = t("supplier").merge(nation[nation.n_name == "GERMANY"], left_on="s_nationkey", right_on="n_nationkey")
    ps = t("partsupp").merge(s, left_on="ps_suppkey", right_on="s_suppkey")
    ps["value"] = ps.ps_supplycost * ps.ps_availqty
    threshold = ps.value.sum() * FRACTION
    r = ps.groupby("ps_partkey", as_index=False).value.sum()
    r = r[r.value > threshold]
    return r.sort_values("value", ascending=False)


def q12(t):
    li = t("lineitem")
    li = li[
        li.l_shipmode.isin(["MAIL", "SHIP"])
        & (li.l_commitdate < li.l_receiptdate)
        & (li.l_shipdate < li.l_commitdate)
        & (li.l_receiptdate >= pd.Timestamp("1994-01-01"))
        & (li.l_receiptdate < pd.Timestamp("1995-01-01"))
    ]
    j = li.merge(t("orders"), left_on="l_orderkey", right_on="o_orderkey")
    urgent = j.o_orderpriority.isin(["1-URGENT", "2-HIGH"])
    j["high_line_count"] = urgent.astype(int)
    j["low_line_count"] = (~urgent).astype(int)
    r = j.groupby("l_shipmode", as_index=False)[["high_line_count", "low_line_count"]].sum()
    return r.sort_values("l_shipmode")


def q13(t):
    orders = t("orders")
    o = orders[~orders.o_comment.str.contains("special.*requests")]
    j = t("customer").merge(o, left_on="c_custkey", right_on="o_custkey", how="left")
    counts = j.groupby("c_custkey").o_orderkey.count().reset_index(name="c_count")
    r = counts.groupby("c_count").size().reset_index(name="custdist")
    return r.sort_values(["custdist", "c_count"], ascending=[False, False])


def q14(t):
    lineitem = t("lineitem")
    li = lineitem[(lineitem.l_shipdate >= pd.Timestamp("1995-09-01")) & (lineitem.l_shipdate < pd.Timestamp("1995-10-01"))]
    j = li.merge(t("part"), left_on="l_partkey", right_on="p_partkey")
    j["revenue"] = j.l_extendedprice * (1 - j.l_discount)
    promo = j.revenue.where(j.p_type.str.startswith("PROMO"), 0).sum()
    return 100.0 * promo / j.revenue.sum()


def q15(t):
    lineitem = t("lineitem")
    li = lineitem[(lineitem.l_shipdate >= pd.Timestamp("1996-01-01")) & (lineitem.l_shipdate < pd.Timestamp("1996-04-01"))]
    li = li.assign(revenue=li.l_extendedprice * (1 - li.l_discount))
    rev = li.groupby("l_suppkey", as_index=False).agg(total_revenue=("revenue", "sum"))
    top = rev[rev.total_revenue == rev.total_revenue.max()]
    j = t("supplier").merge(top, left_on="s_suppkey", right_on="l_suppkey")
    return j[["s_suppkey", "s_name", "s_address", "s_phone", "total_revenue"]].sort_values("s_suppkey")


def q16(t):
    part, partsupp, supplier = t("part"), t("partsupp"), t("supplier")
    p = part[
        (part.p_brand != "Brand#45")
        & ~part.p_type.str.startswith("MEDIUM POLISHED")
        & part.p_size.isin([49, 14, 23, 45, 19, 3, 36, 9])
    ]
    complaints = supplier[supplier.s_comment.str.contains("Customer.*Complaints")]
    ps = partsupp[~partsupp.ps_suppkey.isin(complaints.s_suppkey)]
    j = p.merge(ps, left_on="p_partkey", right_on="ps_partkey")
    r = j.groupby(["p_brand", "p_type", "p_size"], as_index=False).ps_suppkey.nunique()
    r = r.rename(columns={"ps_suppkey": "supplier_cnt"})
    return r.sort_values(["supplier_cnt", "p_brand", "p_type", "p_size"], ascending=[False, True, True, True])


def q17(t):
    part = t("part")
    p = part[(part.p_brand == "Brand#23") & (part.p_container == "MED BOX")]
    j = t("lineitem").merge(p, left_on="l_partkey", right_on="p_partkey")
    avg = j.groupby("l_partkey", as_index=False).agg(avg_qty=("l_quantity", "mean"))
    j = j.merge(avg, on="l_partkey")
    return j[j.l_quantity < 0.2 * j.avg_qty].l_extendedprice.sum() / 7.0


def q18(t):
    lineitem, orders = t("lineitem"), t("orders")
    qty = lineitem.groupby("l_orderkey", as_index=False).l_quantity.sum()
    big = qty[qty.l_quantity > 300]
    o = orders[orders.o_orderkey.isin(big.l_orderkey)]
    j = (
        o.merge(t("customer"), left_on="o_custkey", right_on="c_custkey")
        .merge(lineitem, left_on="o_orderkey", right_on="l_orderkey")
    )
    keys = ["c_name", "c_custkey", "o_orderkey", "o_orderdate", "o_totalprice"]
    r = j.groupby(keys, as_index=False).l_quantity.sum()
    return r.sort_values(["o_totalprice", "o_orderdate"], ascending=[False, True]).head(100)


def q19(t):
    j = t("lineitem").merge(t("part"), left_on="l_partkey", right_on="p_partkey")
    common = j.l_shipmode.isin(["AIR", "AIR REG"]) & (j.l_shipinstruct == "DELIVER IN PERSON")
    c1 = (
        (j.p_brand == "Brand#12")
        & j.p_container.isin(["SM CASE", "SM BOX", "SM PACK", "SM PKG"])
        & j.l_quantity.between(1, 11)
        & j.p_size.between(1, 5)
    )
    c2 = (
        (j.p_brand == "Brand#23")
        & j.p_container.isin(["MED BAG", "MED BOX", "MED PKG", "MED PACK"])
        & j.l_quantity.between(10, 20)
        & j.p_size.between(1, 10)
    )
    c3 = (
        (j.p_brand == "Brand#34")
        & j.p_container.isin(["LG CASE", "LG BOX", "LG PACK", "LG PKG"])
        & j.l_quantity.between(20, 30)
        & j.p_size.between(1, 15)
    )
    j = j[common & (c1 | c2 | c3)]
    return (j.l_extendedprice * (1 - j.l_discount)).sum()


def q20(t):
    part, lineitem, partsupp, nation = t("part"), t("lineitem"), t("partsupp"), t("nation")
    forest = part[part.p_name.str.startswith("forest")]
    li = lineitem[(lineitem.l_shipdate >= pd.Timestamp("1994-01-01")) & (lineitem.l_shipdate < pd.Timestamp("1995-01-01"))]
    shipped = li.groupby(["l_partkey", "l_suppkey"], as_index=False).agg(qty=("l_quantity", "sum"))
    ps = partsupp[partsupp.ps_partkey.isin(forest.p_partkey)]
    ps = ps.merge(shipped, left_on=["ps_partkey", "ps_suppkey"], right_on=["l_partkey", "l_suppkey"])
    ps = ps[ps.ps_availqty > 0.5 * ps.qty]
    s = t("supplier").merge(nation[nation.n_name == "CANADA"], left_on="s_nationkey", right_on="n_nationkey")
    s = s[s.s_suppkey.isin(ps.ps_suppkey)]
    return s[["s_name", "s_address"]].sort_values("s_name")


def q21(t):
    lineitem, nation = t("lineitem"), t("nation")
    li = lineitem[["l_orderkey", "l_suppkey", "l_receiptdate", "l_commitdate"]]
    suppliers = li.groupby("l_orderkey", as_index=False).l_suppkey.nunique()
    shared = suppliers[suppliers.l_suppkey > 1]
    late = li[li.l_receiptdate > li.l_commitdate]
    late_suppliers = late.groupby("l_orderkey", as_index=False).l_suppkey.nunique()
    alone = late_suppliers[late_suppliers.l_suppkey == 1]
    orders = t("orders")
    f = orders[orders.o_orderstatus == "F"]
    s = t("supplier").merge(nation[nation.n_name == "SAUDI ARABIA"], left_on="s_nationkey", right_on="n_nationkey")
    j = late.merge(f, left_on="l_orderkey", right_on="o_orderkey").merge(s, left_on="l_suppkey", right_on="s_suppkey")
    j = j[j.l_orderkey.isin(shared.l_orderkey) & j.l_orderkey.isin(alone.l_orderkey)]
    r = j.groupby("s_name").size().reset_index(name="numwait")
    return r.sort_values(["numwait", "s_name"], ascending=[False, True]).head(100)


def q22(t):
    customer = t("customer")
    c = customer.assign(cntrycode=customer.c_phone.str[:2])
    c = c[c.cntrycode.isin(["13", "31", "23", "29", "30", "18", "17"])]
    average = c[c.c_acctbal > 0.0].c_acctbal.mean()
    c = c[(c.c_acctbal > average) & ~c.c_custkey.isin(t("orders").o_custkey)]
    r = c.groupby("cntrycode", as_index=False).agg(numcust=("c_custkey", "count"), totacctbal=("c_acctbal", "sum"))
    return r.sort_values("cntrycode")


def normal(df: pd.DataFrame) -> pd.DataFrame:
    """Rows numbered from 0, dates as ``datetime64[ns]`` (DuckDB gives ``datetime.date``)."""
    df = df.reset_index(drop=True)
    for c in df.columns:
        first = df[c].iloc[0] if len(df) else None
        if pd.api.types.is_datetime64_any_dtype(df[c]) or hasattr(first, "isoformat"):
            df[c] = pd.to_datetime(df[c]).astype("datetime64[ns]")
    return df


def assert_same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Column by column in order; numbers to 1e-9 (DuckDB sums decimals exactly, frames
    read them as float64)."""
    assert got.shape == want.shape, f"{got.shape} rows and columns, DuckDB has {want.shape}"
    for i, name in enumerate(want.columns):
        g, w = got.iloc[:, i], want.iloc[:, i]
        if pd.api.types.is_datetime64_any_dtype(w) or not (
            pd.api.types.is_numeric_dtype(w) or isinstance(w.iloc[0], (int, float, np.number))
            or type(w.iloc[0]).__name__ == "Decimal"
        ):
            assert g.astype(str).tolist() == w.astype(str).tolist(), f"column {i} ({name})"
        else:
            np.testing.assert_allclose(g.to_numpy(float), w.astype(float).to_numpy(float), rtol=1e-9,
                                       err_msg=f"column {i} ({name})")


QUERIES = {i: globals()[f"q{i}"] for i in range(1, 23)}
